-- The waiters of each lock, and the decision read's queue written so that
-- no plan of it runs through the lock's history. PL/pgSQL keeps for the
-- server session the generic plan of each statement of
-- lockledger_read_decision, made at its first calls: on a young ledger's
-- near-empty tables 0012's queue planned as a scan of events_lock_seq by
-- the lock's name alone (every event the lock ever had, at each decision,
-- and again for each waiter), and after an ANALYZE as a bitmap of that
-- same index. events_waiters holds the waiters alone and serves both of
-- the queue's conditions, so that it is the cheapest path to the
-- candidates at any statistics. Whether a candidate still waits is a
-- subquery run for each one (OFFSET 0 keeps it from becoming a join, which
-- a plan may run as one scan of the lock's events) in which the lock's
-- name and the type are compared as expressions, which no index serves:
-- it reads the candidate's request's events, or those after it.
CREATE INDEX events_waiters ON events (lock_name, at) WHERE type = 'acquire_blocked';

CREATE OR REPLACE FUNCTION lockledger_read_decision(p_lock text, p_since text, p_head boolean) RETURNS json
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
            AND NOT EXISTS (SELECT 1 FROM events f WHERE f.request_id = e.request_id AND f.lock_name || '' = e.lock_name
                AND f.seq > e.seq AND f.type || '' IN ('lock_acquired', 'lock_stolen', 'acquire_blocked') OFFSET 0)),
        'Acquired', (SELECT encode(body, 'base64') FROM events WHERE seq = token AND request_id = holder),
        'Head', head,
        'Tree', tree);
END
$$;
