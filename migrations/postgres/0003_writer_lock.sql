-- The writer lock: writers serialise on this one row, locked FOR UPDATE,
-- which only a role with UPDATE on the table may lock. A role that can
-- only read (or take advisory locks) cannot hold up the writers.
CREATE TABLE writer_lock (
    id integer PRIMARY KEY CHECK (id = 1)
);
INSERT INTO writer_lock (id) VALUES (1);

CREATE TRIGGER writer_lock_no_update BEFORE UPDATE ON writer_lock
    FOR EACH ROW EXECUTE FUNCTION lockledger_refuse();
CREATE TRIGGER writer_lock_no_delete BEFORE DELETE ON writer_lock
    FOR EACH ROW EXECUTE FUNCTION lockledger_refuse();
CREATE TRIGGER writer_lock_no_truncate BEFORE TRUNCATE ON writer_lock
    FOR EACH STATEMENT EXECUTE FUNCTION lockledger_refuse();

CREATE INDEX events_lock_seq ON events (lock_name, seq);

-- The projection follows the events. A role other than the tables' owner
-- (whose project and import rewrite the projection as replay gives it)
-- changes a row of locks or lock_holders only as the events of the same
-- transaction say: a held row is the holding its acquiring event (at its
-- fencing token) recorded, renewed by the event at its updated_seq; a
-- free row is freed by the release or take-over at its updated_seq; a
-- row moves only forward in the log; a shared holder's row goes only after
-- an event ends its holding. Checked at commit, once every event is in.
CREATE FUNCTION lockledger_projection_follows() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r record;
    e record;
    a record;
    eb jsonb;
    ab jsonb;
    shared boolean := TG_TABLE_NAME = 'lock_holders';
    held boolean;
BEGIN
    IF pg_catalog.pg_has_role(current_user, (SELECT relowner FROM pg_catalog.pg_class WHERE oid = TG_RELID), 'MEMBER') THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' THEN
        IF NOT shared THEN
            RAISE EXCEPTION 'lockledger: the row of lock % in locks cannot be deleted', OLD.lock_name
                USING ERRCODE = 'restrict_violation';
        END IF;
        PERFORM 1 FROM events
            WHERE lock_name = OLD.lock_name AND seq > OLD.updated_seq
                AND ((type = 'lock_released' AND (request_id = OLD.request_id
                        OR convert_from(body, 'UTF8')::jsonb ->> 'released_request_id' = OLD.request_id))
                    OR (type = 'lock_stolen' AND convert_from(body, 'UTF8')::jsonb -> 'previous_lock' ->> 'request_id' = OLD.request_id));
        IF NOT FOUND THEN
            RAISE EXCEPTION 'lockledger: shared holder % of lock % is deleted from lock_holders, but no event released it or took its slot',
                OLD.request_id, OLD.lock_name USING ERRCODE = 'restrict_violation';
        END IF;
        RETURN NULL;
    END IF;
    r := NEW;
    IF TG_OP = 'UPDATE' AND NEW.updated_seq <= OLD.updated_seq THEN
        RAISE EXCEPTION 'lockledger: the row of lock % in % goes back from seq % to seq %',
            NEW.lock_name, TG_TABLE_NAME, OLD.updated_seq, NEW.updated_seq USING ERRCODE = 'restrict_violation';
    END IF;
    SELECT * INTO e FROM events WHERE seq = r.updated_seq;
    IF NOT FOUND OR e.lock_name <> r.lock_name THEN
        RAISE EXCEPTION 'lockledger: the row of lock % in % names seq %, which is not an event of that lock',
            r.lock_name, TG_TABLE_NAME, r.updated_seq USING ERRCODE = 'restrict_violation';
    END IF;
    eb := convert_from(e.body, 'UTF8')::jsonb;
    held := shared OR (to_jsonb(r) ->> 'held')::integer <> 0;
    IF NOT held THEN
        IF NOT ((e.type = 'lock_released' AND (CASE WHEN (eb ->> 'forced')::boolean THEN eb ->> 'released_request_id' ELSE e.request_id END) = r.request_id)
                OR (e.type = 'lock_stolen' AND eb ->> 'mode' = 'shared' AND eb -> 'previous_lock' ->> 'request_id' = r.request_id)) THEN
            RAISE EXCEPTION 'lockledger: the row of lock % in locks says free, but the event at seq % (%) does not free request %',
                r.lock_name, r.updated_seq, e.type, r.request_id USING ERRCODE = 'restrict_violation';
        END IF;
        RETURN NULL;
    END IF;
    IF NOT (e.type IN ('lock_acquired', 'lock_stolen', 'lock_heartbeat') AND e.request_id = r.request_id AND e.at = r.heartbeat_at) THEN
        RAISE EXCEPTION 'lockledger: the row of lock % in % says request % holds it (last heartbeat %), but the event at seq % is % of request % at %',
            r.lock_name, TG_TABLE_NAME, r.request_id, r.heartbeat_at, r.updated_seq, e.type, e.request_id, e.at
            USING ERRCODE = 'restrict_violation';
    END IF;
    SELECT * INTO a FROM events WHERE seq = r.fencing_token;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'lockledger: the row of lock % in % names fencing token %, which is no event',
            r.lock_name, TG_TABLE_NAME, r.fencing_token USING ERRCODE = 'restrict_violation';
    END IF;
    ab := convert_from(a.body, 'UTF8')::jsonb;
    IF a.lock_name <> r.lock_name OR a.request_id <> r.request_id OR a.type NOT IN ('lock_acquired', 'lock_stolen')
            OR (coalesce(ab ->> 'mode', '') = 'shared') <> shared
            OR a.actor <> r.actor OR a.at <> r.created_at
            OR ab ->> 'host_id' <> r.host_id OR (ab ->> 'pid')::bigint <> r.pid
            OR coalesce(ab ->> 'pid_start', '') <> r.pid_start OR coalesce(ab ->> 'boot_id', '') <> r.boot_id
            OR (ab ->> 'ttl_seconds')::bigint <> r.ttl_seconds
            OR coalesce(ab ->> 'intent', '') <> r.intent OR coalesce(ab ->> 'intent_version', '') <> r.intent_version
            OR r.metadata::jsonb <> coalesce(ab -> 'metadata', '{}'::jsonb)
            OR (NOT shared AND (to_jsonb(r) ->> 'targets')::jsonb <> coalesce(ab -> 'targets', '[]'::jsonb))
            OR (shared AND coalesce((ab ->> 'limit')::bigint, 0) <> (to_jsonb(r) ->> 'slot_limit')::bigint) THEN
        RAISE EXCEPTION 'lockledger: the row of lock % in % is not the holding of request % that the event at its fencing token (seq %) recorded',
            r.lock_name, TG_TABLE_NAME, r.request_id, r.fencing_token USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NULL;
END
$$;

CREATE CONSTRAINT TRIGGER locks_follow_events AFTER INSERT OR DELETE OR UPDATE ON locks
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION lockledger_projection_follows();
CREATE CONSTRAINT TRIGGER lock_holders_follow_events AFTER INSERT OR DELETE OR UPDATE ON lock_holders
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION lockledger_projection_follows();
