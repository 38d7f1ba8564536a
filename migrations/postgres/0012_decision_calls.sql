-- A decision's statements while its group holds the writer row, in one
-- call to read and one to write (store/decision.go): PL/pgSQL keeps each
-- statement's plan for the session, where every statement sent on its own
-- is parsed and planned again (no named statement outlives a transaction,
-- for PgBouncer). They only read and write rows: every decision is made
-- in Go, every event built, sealed, signed and validated there before the
-- write. SECURITY INVOKER: the caller's own grants apply to every row,
-- and the append-only and projection triggers fire as for any statement.
-- Only writers call them: a reader of an older ledger needs neither.

-- The lock's row (with its exclusive holder), its shared holders, the
-- candidates of its queue recorded at or after p_since, the body of the
-- event that gave its exclusive holder the lock, and with p_head the head
-- of the log and the Merkle rows an append after it reads.
CREATE FUNCTION lockledger_read_decision(p_lock text, p_since text, p_head boolean) RETURNS json
LANGUAGE plpgsql STABLE SECURITY INVOKER AS $$
DECLARE
    lock_row json;
    token bigint;
    holder text;
    head json;
    tree json;
    size bigint;
    frontier bigint[] := '{}';
    total bigint := 0;
    b integer;
BEGIN
    SELECT json_build_object('Name', l.lock_name, 'Held', h.request_id IS NOT NULL, 'RequestID', l.request_id,
            'Actor', coalesce(h.actor, ''), 'Intent', coalesce(h.intent, ''), 'IntentVersion', coalesce(h.intent_version, ''),
            'HostID', l.host_id, 'PID', coalesce(h.pid, 0), 'PIDStart', coalesce(h.pid_start, ''),
            'BootID', coalesce(h.boot_id, ''), 'CreatedAt', coalesce(h.created_at, ''),
            'HeartbeatAt', coalesce(h.heartbeat_at, ''), 'TTLSeconds', coalesce(h.ttl_seconds, 0),
            'Metadata', coalesce(h.metadata, ''), 'FencingToken', l.fencing_token, 'UpdatedSeq', l.updated_seq,
            'File', encode(l.file, 'base64'), 'Targets', l.targets, 'PIDNS', h.pid_ns),
        l.fencing_token, CASE WHEN h.request_id IS NOT NULL THEN l.request_id END
    INTO lock_row, token, holder
    FROM locks l LEFT JOIN lock_holders h ON h.lock_name = l.lock_name AND h.exclusive = 1
    WHERE l.lock_name = p_lock;
    IF p_head THEN
        SELECT coalesce((SELECT seq FROM events ORDER BY seq DESC LIMIT 1), 0) INTO size;
        SELECT json_build_object('Seq', size,
            'Hash', coalesce((SELECT hash FROM events ORDER BY seq DESC LIMIT 1), ''),
            'Updated', coalesce((SELECT max(u) FROM (SELECT max(updated_seq) AS u FROM locks
                UNION ALL SELECT max(updated_seq) FROM lock_holders) AS t), 0),
            'Hashed', coalesce((SELECT max(seq) FROM tlog_hashes), 0))
        INTO head;
        -- The tree of size events is a run of complete subtrees, largest
        -- first; each one's hash is in the row of the event that completed it.
        FOR b IN REVERSE 62..0 LOOP
            IF (size >> b) & 1 = 1 THEN
                total := total + (1::bigint << b);
                frontier := frontier || total;
            END IF;
        END LOOP;
        SELECT json_agg(json_build_object('Seq', seq, 'Hashes', encode(hashes, 'base64')))
        INTO tree
        FROM tlog_hashes WHERE seq = ANY (frontier);
    END IF;
    RETURN json_build_object(
        'Row', lock_row,
        'Shared', (SELECT json_agg(json_build_object('Name', lock_name, 'RequestID', request_id, 'Actor', actor,
                'Intent', intent, 'IntentVersion', intent_version, 'HostID', host_id, 'PID', pid, 'PIDStart', pid_start,
                'BootID', boot_id, 'CreatedAt', created_at, 'HeartbeatAt', heartbeat_at, 'TTLSeconds', ttl_seconds,
                'Metadata', metadata, 'FencingToken', fencing_token, 'Limit', slot_limit, 'UpdatedSeq', updated_seq,
                'PIDNS', pid_ns, 'Exclusive', exclusive <> 0, 'Targets', targets) ORDER BY request_id)
            FROM lock_holders WHERE lock_name = p_lock AND exclusive = 0),
        'Queue', (SELECT json_agg(json_build_object('Seq', e.seq, 'Lock', e.lock_name, 'RequestID', e.request_id,
                'Actor', e.actor, 'At', e.at, 'Body', encode(e.body, 'base64')) ORDER BY e.seq)
            FROM events e
            WHERE e.type = 'acquire_blocked' AND e.at >= p_since AND e.lock_name = p_lock
            AND NOT EXISTS (SELECT 1 FROM events f WHERE f.request_id = e.request_id AND f.lock_name = e.lock_name
                AND f.seq > e.seq AND f.type IN ('lock_acquired', 'lock_stolen', 'acquire_blocked'))),
        'Acquired', (SELECT encode(body, 'base64') FROM events WHERE seq = token AND request_id = holder),
        'Head', head,
        'Tree', tree);
END
$$;

-- A decision's writes, in the order it made them: its events, their
-- Merkle rows, then its lock's and holders' rows (p: see store/decision.go).
CREATE FUNCTION lockledger_write_decision(p json) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER AS $$
DECLARE
    e events;
    t tlog_hashes;
    o json;
    h lock_holders;
    l locks;
BEGIN
    FOR e IN SELECT * FROM json_populate_recordset(NULL::events, coalesce(p->'events', '[]')) LOOP
        INSERT INTO events (seq, event_id, type, lock_name, request_id, actor, at, body, prev_hash, hash)
        VALUES (e.seq, e.event_id, e.type, e.lock_name, e.request_id, e.actor, e.at, e.body, e.prev_hash, e.hash);
    END LOOP;
    FOR t IN SELECT * FROM json_populate_recordset(NULL::tlog_hashes, coalesce(p->'tree', '[]')) LOOP
        INSERT INTO tlog_hashes (seq, hashes) VALUES (t.seq, t.hashes);
    END LOOP;
    FOR o IN SELECT * FROM json_array_elements(coalesce(p->'rows', '[]')) LOOP
        CASE o->>'op'
        WHEN 'save_holder' THEN
            h := json_populate_record(NULL::lock_holders, o);
            INSERT INTO lock_holders (lock_name, request_id, actor, intent, intent_version, host_id, pid, pid_start,
                boot_id, created_at, heartbeat_at, ttl_seconds, metadata, fencing_token, slot_limit, updated_seq,
                pid_ns, exclusive, targets)
            VALUES (h.lock_name, h.request_id, h.actor, h.intent, h.intent_version, h.host_id, h.pid, h.pid_start,
                h.boot_id, h.created_at, h.heartbeat_at, h.ttl_seconds, h.metadata, h.fencing_token, h.slot_limit,
                h.updated_seq, h.pid_ns, h.exclusive, h.targets)
            ON CONFLICT (lock_name, request_id) DO UPDATE SET actor=excluded.actor, intent=excluded.intent,
                intent_version=excluded.intent_version, host_id=excluded.host_id, pid=excluded.pid,
                pid_start=excluded.pid_start, boot_id=excluded.boot_id, created_at=excluded.created_at,
                heartbeat_at=excluded.heartbeat_at, ttl_seconds=excluded.ttl_seconds, metadata=excluded.metadata,
                fencing_token=excluded.fencing_token, slot_limit=excluded.slot_limit, updated_seq=excluded.updated_seq,
                pid_ns=excluded.pid_ns, exclusive=excluded.exclusive, targets=excluded.targets;
        WHEN 'delete_holder' THEN
            DELETE FROM lock_holders WHERE lock_name = o->>'lock_name' AND request_id = o->>'request_id';
        WHEN 'delete_exclusive' THEN
            DELETE FROM lock_holders WHERE lock_name = o->>'lock_name' AND request_id = o->>'request_id' AND exclusive = 1;
        WHEN 'save_row' THEN
            l := json_populate_record(NULL::locks, o);
            INSERT INTO locks (lock_name, request_id, host_id, fencing_token, updated_seq, file, targets)
            VALUES (l.lock_name, l.request_id, l.host_id, l.fencing_token, l.updated_seq, l.file, l.targets)
            ON CONFLICT (lock_name) DO UPDATE SET request_id=excluded.request_id, host_id=excluded.host_id,
                fencing_token=excluded.fencing_token, updated_seq=excluded.updated_seq, file=excluded.file,
                targets=excluded.targets;
        END CASE;
    END LOOP;
END
$$;
