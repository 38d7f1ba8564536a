-- A group's decisions read in one call (store.PreparedTx.ReadAhead): for
-- each of p_locks, in order, what lockledger_read_decision (0012) returns
-- for it, the head and the Merkle rows (with p_head) with the first only.
-- Added beside 0012's functions, which stay as they are for a writer of
-- schema 12 still running.
CREATE FUNCTION lockledger_read_decisions(p_locks text[], p_since text, p_head boolean) RETURNS json
LANGUAGE sql STABLE SECURITY INVOKER AS $$
    SELECT coalesce(json_agg(lockledger_read_decision(l, p_since, p_head AND i = 1) ORDER BY i), '[]')
    FROM unnest(p_locks) WITH ORDINALITY AS t(l, i)
$$;
