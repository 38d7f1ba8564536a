-- A prune (lockledger prune) removes the events below a seq from the live
-- store, once an archive of them verified against it, and records it in a
-- ledger_pruned event. Each prune first writes its horizon here, in its own
-- transaction: events below below_seq may be deleted only while the
-- horizon is open, that is until its ledger_pruned event (at marker_seq,
-- the next seq when the row was written) is appended in the same
-- transaction. Every other DELETE of an event is refused, as before. The
-- Merkle hashes (tlog_hashes) all stay: the tree is whole, and every proof
-- keeps working. An unprune (lockledger unprune) puts the last prune's
-- events back from its archive the same way: its prune_restore row opens
-- the inserts of seqs first_seq..below_seq-1 (below the live log) until its
-- ledger_unpruned event, at marker_seq, is appended.
CREATE TABLE prune_horizon (
    marker_seq     INTEGER PRIMARY KEY,
    below_seq      INTEGER NOT NULL,
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
    OR NEW.below_seq <= (SELECT coalesce(min(seq), 0) FROM events)
    OR NEW.below_seq > (SELECT coalesce(max(seq), 0) FROM events)
BEGIN
    SELECT RAISE(ABORT, 'lockledger: a prune horizon must lie inside the live log and name the next seq for its marker');
END;

DROP TRIGGER events_no_delete;

CREATE TRIGGER events_no_delete BEFORE DELETE ON events
WHEN NOT EXISTS (SELECT 1 FROM prune_horizon
    WHERE OLD.seq < below_seq AND marker_seq = (SELECT max(seq) FROM events) + 1)
BEGIN
    SELECT RAISE(ABORT, 'lockledger: events are append-only (DELETE refused)');
END;

CREATE TABLE prune_restore (
    marker_seq     INTEGER PRIMARY KEY,
    first_seq      INTEGER NOT NULL,
    below_seq      INTEGER NOT NULL,
    archive_sha256 TEXT    NOT NULL
);

CREATE TRIGGER prune_restore_no_update BEFORE UPDATE ON prune_restore
BEGIN
    SELECT RAISE(ABORT, 'lockledger: prune_restore is append-only (UPDATE refused)');
END;

CREATE TRIGGER prune_restore_no_delete BEFORE DELETE ON prune_restore
BEGIN
    SELECT RAISE(ABORT, 'lockledger: prune_restore is append-only (DELETE refused)');
END;

CREATE TRIGGER prune_restore_append BEFORE INSERT ON prune_restore
WHEN NEW.marker_seq <> (SELECT coalesce(max(seq), 0) FROM events) + 1
    OR NEW.below_seq <> (SELECT min(seq) FROM events)
    OR NEW.first_seq < 1 OR NEW.first_seq >= NEW.below_seq
BEGIN
    SELECT RAISE(ABORT, 'lockledger: a restore must end where the live log starts and name the next seq for its marker');
END;

DROP TRIGGER events_no_replace;

-- As 0003's, but the seqs of an open restore may be inserted below the
-- live log (each once: seq is the primary key).
CREATE TRIGGER events_no_replace BEFORE INSERT ON events
WHEN (NEW.seq <= (SELECT max(seq) FROM events)
        AND NOT EXISTS (SELECT 1 FROM prune_restore WHERE NEW.seq >= first_seq AND NEW.seq < below_seq
            AND marker_seq = (SELECT max(seq) FROM events) + 1))
    OR EXISTS (SELECT 1 FROM events WHERE event_id = NEW.event_id)
BEGIN
    SELECT RAISE(ABORT, 'lockledger: events are append-only (an INSERT must follow the last seq, with a new event_id)');
END;

-- The event that closes an open horizon is its ledger_pruned marker; an
-- open restore's, its ledger_unpruned marker.
CREATE TRIGGER events_prune_marker BEFORE INSERT ON events
WHEN (NEW.type <> 'ledger_pruned' AND EXISTS (SELECT 1 FROM prune_horizon WHERE marker_seq = NEW.seq))
    OR (NEW.type <> 'ledger_unpruned' AND EXISTS (SELECT 1 FROM prune_restore WHERE marker_seq = NEW.seq))
BEGIN
    SELECT RAISE(ABORT, 'lockledger: an open prune horizon or restore is closed only by its own marker event');
END;
