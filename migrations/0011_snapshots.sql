-- Snapshots of the folded state (replay.State) at every multiple of
-- replay.SnapshotEvery, so that a read of the state at an instant folds
-- from the nearest one instead of from the first event. A snapshot only
-- saves time: a reader takes one only when the event it follows still has
-- the hash it recorded, the state still hashes to state_hash and the live
-- log still starts at from_seq, and folds from the first event otherwise;
-- verify recomputes every one during its fold. Rows are never rewritten.
CREATE TABLE snapshots (
    seq        INTEGER PRIMARY KEY, -- the last event folded
    event_hash TEXT    NOT NULL,    -- that event's hash
    from_seq   INTEGER NOT NULL,    -- the first event folded: where the live log started
    max_at     TEXT    NOT NULL,    -- the latest at among the events folded
    version    INTEGER NOT NULL,    -- the encoding of state
    state_hash TEXT    NOT NULL,    -- hex SHA-256 of state
    state      BLOB    NOT NULL
);

CREATE TRIGGER snapshots_no_update BEFORE UPDATE ON snapshots
BEGIN
    SELECT RAISE(ABORT, 'lockledger: snapshots are never rewritten (UPDATE refused)');
END;
