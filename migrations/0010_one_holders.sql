-- One table of holders: lock_holders holds every holder of a lock, the
-- exclusive one too (exclusive = 1, a slot limit of 1, and the --file
-- targets its lock file projects), so that every acquire reads a lock's
-- holders from one place. locks keeps what belongs to the lock itself:
-- the last exclusive holding's request id, host, fencing token, targets
-- and lock file (a leftover file of ours is told from another tool's by
-- them), and the seq that last wrote them. Which holding holds the lock
-- is lock_holders' alone.
ALTER TABLE lock_holders ADD COLUMN exclusive INTEGER NOT NULL DEFAULT 0;
ALTER TABLE lock_holders ADD COLUMN targets TEXT NOT NULL DEFAULT '[]';
-- A request that is both a shared holder and the exclusive one is damage
-- verify reports and project repairs: the shared row stays.
INSERT OR IGNORE INTO lock_holders (lock_name, request_id, actor, intent, intent_version, host_id, pid, pid_start, boot_id,
    created_at, heartbeat_at, ttl_seconds, metadata, fencing_token, slot_limit, updated_seq, pid_ns, exclusive, targets)
SELECT lock_name, request_id, actor, intent, intent_version, host_id, pid, pid_start, boot_id,
    created_at, heartbeat_at, ttl_seconds, metadata, fencing_token, 1, updated_seq, pid_ns, 1, targets
FROM locks WHERE held = 1;
ALTER TABLE locks DROP COLUMN held;
ALTER TABLE locks DROP COLUMN actor;
ALTER TABLE locks DROP COLUMN intent;
ALTER TABLE locks DROP COLUMN intent_version;
ALTER TABLE locks DROP COLUMN pid;
ALTER TABLE locks DROP COLUMN pid_start;
ALTER TABLE locks DROP COLUMN boot_id;
ALTER TABLE locks DROP COLUMN created_at;
ALTER TABLE locks DROP COLUMN heartbeat_at;
ALTER TABLE locks DROP COLUMN ttl_seconds;
ALTER TABLE locks DROP COLUMN metadata;
ALTER TABLE locks DROP COLUMN pid_ns;
