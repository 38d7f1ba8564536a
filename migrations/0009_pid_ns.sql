-- A holder's PID namespace, as its lock_acquired / lock_stolen event
-- recorded it (pid_ns): its pid names a process only there. NULL for a
-- holding recorded before it was, or on a system without namespaces.
-- Each row takes it from the event at its fencing token.
ALTER TABLE locks ADD COLUMN pid_ns INTEGER;
ALTER TABLE lock_holders ADD COLUMN pid_ns INTEGER;
UPDATE locks SET pid_ns = (SELECT json_extract(CAST(e.body AS TEXT), '$.pid_ns') FROM events e WHERE e.seq = locks.fencing_token);
UPDATE lock_holders SET pid_ns = (SELECT json_extract(CAST(e.body AS TEXT), '$.pid_ns') FROM events e WHERE e.seq = lock_holders.fencing_token);
