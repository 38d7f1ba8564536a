-- One table of holders: see the SQLite migration 0010_one_holders.sql.
-- lock_holders holds every holder, the exclusive one too (exclusive = 1,
-- slot_limit 1, its targets); locks keeps what belongs to the lock: the
-- last exclusive holding's request id, host, fencing token, targets and
-- lock file, and the seq that last wrote them.
ALTER TABLE lock_holders ADD COLUMN exclusive integer NOT NULL DEFAULT 0;
ALTER TABLE lock_holders ADD COLUMN targets text NOT NULL DEFAULT '[]';
INSERT INTO lock_holders (lock_name, request_id, actor, intent, intent_version, host_id, pid, pid_start, boot_id,
    created_at, heartbeat_at, ttl_seconds, metadata, fencing_token, slot_limit, updated_seq, pid_ns, exclusive, targets)
SELECT lock_name, request_id, actor, intent, intent_version, host_id, pid, pid_start, boot_id,
    created_at, heartbeat_at, ttl_seconds, metadata, fencing_token, 1, updated_seq, pid_ns, 1, targets
FROM locks WHERE held = 1
ON CONFLICT (lock_name, request_id) DO NOTHING;
ALTER TABLE locks DROP COLUMN held, DROP COLUMN actor, DROP COLUMN intent, DROP COLUMN intent_version,
    DROP COLUMN pid, DROP COLUMN pid_start, DROP COLUMN boot_id, DROP COLUMN created_at, DROP COLUMN heartbeat_at,
    DROP COLUMN ttl_seconds, DROP COLUMN metadata, DROP COLUMN pid_ns;

-- The projection follows the events (as 0003 made it, for one table of
-- holders). A role other than the tables' owner changes a row only as the
-- events of the same transaction say. A holder's row (lock_holders, either
-- mode) is the holding its acquiring event (at its fencing token) recorded,
-- renewed by the event at its updated_seq, and no later event has ended
-- it; it goes only after an event ends it. A lock's row (locks) is written
-- by its exclusive holding's acquiring event or heartbeat (its request,
-- host and targets those of the acquiring event), or by the event that
-- frees that holding, and is never deleted. Every row moves only forward.
-- Checked at commit, once every event is in.
CREATE OR REPLACE FUNCTION lockledger_projection_follows() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r record;
    e record;
    a record;
    eb jsonb;
    ab jsonb;
    holder boolean := TG_TABLE_NAME = 'lock_holders';
    exclusive boolean;
BEGIN
    IF pg_catalog.pg_has_role(current_user, (SELECT relowner FROM pg_catalog.pg_class WHERE oid = TG_RELID), 'MEMBER') THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' THEN
        r := OLD;
    ELSE
        r := NEW;
    END IF;
    IF holder THEN
        PERFORM 1 FROM events
            WHERE lock_name = r.lock_name AND seq > r.updated_seq
                AND ((type = 'lock_released' AND (request_id = r.request_id
                        OR convert_from(body, 'UTF8')::jsonb ->> 'released_request_id' = r.request_id))
                    OR (type = 'lock_stolen' AND convert_from(body, 'UTF8')::jsonb -> 'previous_lock' ->> 'request_id' = r.request_id));
        IF TG_OP = 'DELETE' THEN
            IF NOT FOUND THEN
                RAISE EXCEPTION 'lockledger: holder % of lock % is deleted from lock_holders, but no event released it or took it over',
                    OLD.request_id, OLD.lock_name USING ERRCODE = 'restrict_violation';
            END IF;
            RETURN NULL;
        END IF;
        IF FOUND THEN
            RAISE EXCEPTION 'lockledger: lock_holders says request % holds lock %, but an event after seq % ended its holding',
                r.request_id, r.lock_name, r.updated_seq USING ERRCODE = 'restrict_violation';
        END IF;
    ELSIF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'lockledger: the row of lock % in locks cannot be deleted', OLD.lock_name
            USING ERRCODE = 'restrict_violation';
    END IF;
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
    IF NOT holder THEN
        IF (e.type = 'lock_released' AND (CASE WHEN (eb ->> 'forced')::boolean THEN eb ->> 'released_request_id' ELSE e.request_id END) = r.request_id)
                OR (e.type = 'lock_stolen' AND eb ->> 'mode' = 'shared' AND eb -> 'previous_lock' ->> 'request_id' = r.request_id) THEN
            RETURN NULL;
        END IF;
        IF NOT (e.type IN ('lock_acquired', 'lock_stolen', 'lock_heartbeat') AND e.request_id = r.request_id) THEN
            RAISE EXCEPTION 'lockledger: the row of lock % in locks names request % at seq %, but that event (%) neither renews nor frees its holding',
                r.lock_name, r.request_id, r.updated_seq, e.type USING ERRCODE = 'restrict_violation';
        END IF;
        SELECT * INTO a FROM events WHERE seq = r.fencing_token;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'lockledger: the row of lock % in locks names fencing token %, which is no event',
                r.lock_name, r.fencing_token USING ERRCODE = 'restrict_violation';
        END IF;
        ab := convert_from(a.body, 'UTF8')::jsonb;
        IF a.lock_name <> r.lock_name OR a.request_id <> r.request_id OR a.type NOT IN ('lock_acquired', 'lock_stolen')
                OR coalesce(ab ->> 'mode', '') = 'shared' OR ab ->> 'host_id' <> r.host_id
                OR r.targets::jsonb <> coalesce(ab -> 'targets', '[]'::jsonb) THEN
            RAISE EXCEPTION 'lockledger: the row of lock % in locks is not the holding of request % that the event at its fencing token (seq %) recorded',
                r.lock_name, r.request_id, r.fencing_token USING ERRCODE = 'restrict_violation';
        END IF;
        RETURN NULL;
    END IF;
    exclusive := r.exclusive <> 0;
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
            OR (coalesce(ab ->> 'mode', '') = 'shared') = exclusive
            OR a.actor <> r.actor OR a.at <> r.created_at
            OR ab ->> 'host_id' <> r.host_id OR (ab ->> 'pid')::bigint <> r.pid
            OR coalesce(ab ->> 'pid_start', '') <> r.pid_start OR coalesce(ab ->> 'boot_id', '') <> r.boot_id
            OR (ab ->> 'ttl_seconds')::bigint <> r.ttl_seconds
            OR coalesce(ab ->> 'intent', '') <> r.intent OR coalesce(ab ->> 'intent_version', '') <> r.intent_version
            OR r.metadata::jsonb <> coalesce(ab -> 'metadata', '{}'::jsonb)
            OR (exclusive AND (r.targets::jsonb <> coalesce(ab -> 'targets', '[]'::jsonb) OR r.slot_limit <> 1))
            OR (NOT exclusive AND coalesce((ab ->> 'limit')::bigint, 0) <> r.slot_limit) THEN
        RAISE EXCEPTION 'lockledger: the row of lock % in % is not the holding of request % that the event at its fencing token (seq %) recorded',
            r.lock_name, TG_TABLE_NAME, r.request_id, r.fencing_token USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NULL;
END
$$;
