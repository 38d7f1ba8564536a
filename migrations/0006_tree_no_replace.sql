-- A REPLACE (INSERT OR REPLACE, REPLACE INTO) of a Merkle row or a
-- checkpoint whose key is taken deletes the old row without firing the
-- DELETE triggers (SQLite fires them for a REPLACE only under
-- recursive_triggers), as 0003 says of events. These refuse it, and an
-- UPSERT, before the conflict is resolved. The ledger only ever adds the
-- hashes of an event that has none, and a checkpoint with a new id.
CREATE TRIGGER tlog_hashes_no_replace BEFORE INSERT ON tlog_hashes
WHEN EXISTS (SELECT 1 FROM tlog_hashes WHERE seq = NEW.seq)
BEGIN
    SELECT RAISE(ABORT, 'lockledger: tlog_hashes are append-only (an INSERT must not replace a row)');
END;

CREATE TRIGGER checkpoints_no_replace BEFORE INSERT ON checkpoints
WHEN EXISTS (SELECT 1 FROM checkpoints WHERE id = NEW.id)
BEGIN
    SELECT RAISE(ABORT, 'lockledger: checkpoints are append-only (an INSERT must not replace a row)');
END;

-- A checkpoint covers events the log holds: a row claiming a larger tree
-- would only make writers believe it signed.
CREATE TRIGGER checkpoints_within_log BEFORE INSERT ON checkpoints
WHEN NEW.size < 1 OR NEW.size > (SELECT coalesce(max(seq), 0) FROM events)
BEGIN
    SELECT RAISE(ABORT, 'lockledger: a checkpoint must cover 1 to as many events as the log holds');
END;
