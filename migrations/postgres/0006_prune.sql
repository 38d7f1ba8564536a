-- A prune: see the SQLite migration 0008_prune.sql. Events below an open
-- horizon's below_seq may be deleted until its ledger_pruned marker is
-- appended in the same transaction; every other DELETE is refused.
CREATE TABLE prune_horizon (
    marker_seq     bigint PRIMARY KEY,
    below_seq      bigint NOT NULL,
    archive_sha256 text   NOT NULL
);

CREATE TRIGGER prune_horizon_no_update BEFORE UPDATE ON prune_horizon
    FOR EACH ROW EXECUTE FUNCTION lockledger_refuse();
CREATE TRIGGER prune_horizon_no_delete BEFORE DELETE ON prune_horizon
    FOR EACH ROW EXECUTE FUNCTION lockledger_refuse();
CREATE TRIGGER prune_horizon_no_truncate BEFORE TRUNCATE ON prune_horizon
    FOR EACH STATEMENT EXECUTE FUNCTION lockledger_refuse();

CREATE FUNCTION lockledger_prune_horizon_append() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.marker_seq <> coalesce((SELECT max(seq) FROM events), 0) + 1
        OR NEW.below_seq <= coalesce((SELECT min(seq) FROM events), 0)
        OR NEW.below_seq > coalesce((SELECT max(seq) FROM events), 0) THEN
        RAISE EXCEPTION 'lockledger: a prune horizon must lie inside the live log and name the next seq for its marker'
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER prune_horizon_append BEFORE INSERT ON prune_horizon
    FOR EACH ROW EXECUTE FUNCTION lockledger_prune_horizon_append();

CREATE FUNCTION lockledger_events_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM prune_horizon
        WHERE OLD.seq < below_seq AND marker_seq = (SELECT max(seq) FROM events) + 1) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'lockledger: events are append-only (DELETE refused)'
        USING ERRCODE = 'restrict_violation';
END
$$;

DROP TRIGGER events_no_delete ON events;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION lockledger_events_delete();

CREATE TABLE prune_restore (
    marker_seq     bigint PRIMARY KEY,
    first_seq      bigint NOT NULL,
    below_seq      bigint NOT NULL,
    archive_sha256 text   NOT NULL
);

CREATE TRIGGER prune_restore_no_update BEFORE UPDATE ON prune_restore
    FOR EACH ROW EXECUTE FUNCTION lockledger_refuse();
CREATE TRIGGER prune_restore_no_delete BEFORE DELETE ON prune_restore
    FOR EACH ROW EXECUTE FUNCTION lockledger_refuse();
CREATE TRIGGER prune_restore_no_truncate BEFORE TRUNCATE ON prune_restore
    FOR EACH STATEMENT EXECUTE FUNCTION lockledger_refuse();

CREATE FUNCTION lockledger_prune_restore_append() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.marker_seq <> coalesce((SELECT max(seq) FROM events), 0) + 1
        OR NEW.below_seq IS DISTINCT FROM (SELECT min(seq) FROM events)
        OR NEW.first_seq < 1 OR NEW.first_seq >= NEW.below_seq THEN
        RAISE EXCEPTION 'lockledger: a restore must end where the live log starts and name the next seq for its marker'
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER prune_restore_append BEFORE INSERT ON prune_restore
    FOR EACH ROW EXECUTE FUNCTION lockledger_prune_restore_append();

-- As lockledger_events_append, but the seqs of an open restore may be
-- inserted below the live log (each once: seq is the primary key).
CREATE FUNCTION lockledger_events_append_or_restore() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.seq <> coalesce((SELECT max(seq) FROM events), 0) + 1
        AND NOT EXISTS (SELECT 1 FROM prune_restore WHERE NEW.seq >= first_seq AND NEW.seq < below_seq
            AND marker_seq = (SELECT max(seq) FROM events) + 1) THEN
        RAISE EXCEPTION 'lockledger: events are append-only (an INSERT must follow the last seq, got %)', NEW.seq
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NEW;
END
$$;

DROP TRIGGER events_no_replace ON events;
CREATE TRIGGER events_no_replace BEFORE INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION lockledger_events_append_or_restore();

CREATE FUNCTION lockledger_events_prune_marker() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (NEW.type <> 'ledger_pruned' AND EXISTS (SELECT 1 FROM prune_horizon WHERE marker_seq = NEW.seq))
        OR (NEW.type <> 'ledger_unpruned' AND EXISTS (SELECT 1 FROM prune_restore WHERE marker_seq = NEW.seq)) THEN
        RAISE EXCEPTION 'lockledger: an open prune horizon or restore is closed only by its own marker event'
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER events_prune_marker BEFORE INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION lockledger_events_prune_marker();
