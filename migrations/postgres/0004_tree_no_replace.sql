-- An insert into tlog_hashes or checkpoints never takes a key that is
-- taken, whatever its ON CONFLICT clause (DO NOTHING included), and a
-- checkpoint covers events the log holds: as on SQLite (0006 there).
CREATE FUNCTION lockledger_tlog_append() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM tlog_hashes WHERE seq = NEW.seq) THEN
        RAISE EXCEPTION 'lockledger: tlog_hashes are append-only (an INSERT must not replace a row, seq %)', NEW.seq
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER tlog_hashes_no_replace BEFORE INSERT ON tlog_hashes
    FOR EACH ROW EXECUTE FUNCTION lockledger_tlog_append();

CREATE FUNCTION lockledger_checkpoint_append() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM checkpoints WHERE id = NEW.id) THEN
        RAISE EXCEPTION 'lockledger: checkpoints are append-only (an INSERT must not replace a row, id %)', NEW.id
            USING ERRCODE = 'restrict_violation';
    END IF;
    IF NEW.size < 1 OR NEW.size > coalesce((SELECT max(seq) FROM events), 0) THEN
        RAISE EXCEPTION 'lockledger: a checkpoint must cover 1 to as many events as the log holds (size %)', NEW.size
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER checkpoints_no_replace BEFORE INSERT ON checkpoints
    FOR EACH ROW EXECUTE FUNCTION lockledger_checkpoint_append();
