-- Reads that cost the window, not the whole history.
--
-- A lock's events in log order through an index of their own, so that
-- history NAME and timeline --lock read only that lock's rows, in order,
-- and a page of them (the newest N before a seq) is found without
-- sorting. PostgreSQL has had this index since its 0003.
CREATE INDEX events_lock_seq ON events (lock_name, seq);

-- The earliest at among the events of a snapshot's block: those after
-- seq - 10000 (replay.SnapshotEvery) up to its seq, as they were when the
-- snapshot was made. With max_at (the latest at of every event up to the
-- snapshot), it bounds where the events at or before an instant can lie
-- in the log, whatever order the clocks gave them: a reader looks only in
-- the blocks whose earliest at is at or before that instant. NULL where
-- not known; readers then search the log itself. verify recomputes it.
ALTER TABLE snapshots ADD COLUMN min_at TEXT;

-- Snapshots are never rewritten, but those stored before this column get
-- their blocks' earliest at once, here.
DROP TRIGGER snapshots_no_update;
UPDATE snapshots SET min_at = (SELECT min(+at) FROM events WHERE seq > snapshots.seq - 10000 AND seq <= snapshots.seq);
CREATE TRIGGER snapshots_no_update BEFORE UPDATE ON snapshots
BEGIN
    SELECT RAISE(ABORT, 'lockledger: snapshots are never rewritten (UPDATE refused)');
END;

-- What a reader reads of every snapshot to bound its search, without the
-- states, which SQLite keeps in the row before min_at.
CREATE INDEX snapshots_bounds ON snapshots (from_seq, seq, event_hash, max_at, min_at);
