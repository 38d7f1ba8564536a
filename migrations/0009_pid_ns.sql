-- A holder's PID namespace, as its lock_acquired / lock_stolen event
-- recorded it (pid_ns): its pid names a process only there. NULL for a
-- holding recorded before it was, or on a system without namespaces.
ALTER TABLE locks ADD COLUMN pid_ns INTEGER;
ALTER TABLE lock_holders ADD COLUMN pid_ns INTEGER;
