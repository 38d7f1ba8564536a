-- A prune (lockledger prune) removes the events below a seq from the live
-- store, once an archive of them verified against it, and records it in a
-- ledger_pruned event. Each prune first writes its horizon here, in its own
-- transaction: events below below_seq may be deleted only while the
-- horizon is open, that is until its ledger_pruned event (at marker_seq,
-- the next seq when the row was written) is appended in the same
-- transaction. Every other DELETE of an event is refused, as before. The
-- Merkle hashes (tlog_hashes) all stay: the tree is whole, and every proof
-- keeps working.
CREATE TABLE prune_horizon (
    below_seq      INTEGER PRIMARY KEY,
    marker_seq     INTEGER NOT NULL,
    archive_sha256 TEXT    NOT NULL
);

CREATE TRIGGER prune_horizon_no_update BEFORE UPDATE ON prune_horizon
BEGIN
    SELECT RAISE(ABORT, 'lockledger: prune_horizon is append-only (UPDATE refused)');
END;

CREATE TRIGGER prune_horizon_no_delete BEFORE DELETE ON prune_horizon
BEGIN
    SELECT RAISE(ABORT, 'lockledger: prune_horizon is append-only (DELETE refused)');
END;

CREATE TRIGGER prune_horizon_append BEFORE INSERT ON prune_horizon
WHEN NEW.marker_seq <> (SELECT coalesce(max(seq), 0) FROM events) + 1
    OR NEW.below_seq <= (SELECT coalesce(max(below_seq), 1) FROM prune_horizon)
    OR NEW.below_seq > (SELECT coalesce(max(seq), 0) FROM events)
BEGIN
    SELECT RAISE(ABORT, 'lockledger: a prune horizon must rise, stay within the log, and name the next seq for its marker');
END;

DROP TRIGGER events_no_delete;

CREATE TRIGGER events_no_delete BEFORE DELETE ON events
WHEN NOT EXISTS (SELECT 1 FROM prune_horizon
    WHERE OLD.seq < below_seq AND marker_seq = (SELECT max(seq) FROM events) + 1)
BEGIN
    SELECT RAISE(ABORT, 'lockledger: events are append-only (DELETE refused)');
END;

-- The event that closes an open horizon is its ledger_pruned marker.
CREATE TRIGGER events_prune_marker BEFORE INSERT ON events
WHEN NEW.type <> 'ledger_pruned' AND EXISTS (SELECT 1 FROM prune_horizon WHERE marker_seq = NEW.seq)
BEGIN
    SELECT RAISE(ABORT, 'lockledger: an open prune horizon is closed only by its ledger_pruned event');
END;
