-- Shared holders and semaphore slots: one row per holder (lock name and
-- request id), the projection of lock_acquired / lock_stolen events with
-- mode "shared". A holder's row goes when it is released or its slot taken.
-- Exclusive holders stay in locks, whose row a shared holder never touches.
CREATE TABLE lock_holders (
    lock_name      TEXT    NOT NULL,
    request_id     TEXT    NOT NULL,
    actor          TEXT    NOT NULL,
    intent         TEXT    NOT NULL,
    intent_version TEXT    NOT NULL,
    host_id        TEXT    NOT NULL,
    pid            INTEGER NOT NULL,
    pid_start      TEXT    NOT NULL,
    boot_id        TEXT    NOT NULL,
    created_at     TEXT    NOT NULL,
    heartbeat_at   TEXT    NOT NULL,
    ttl_seconds    INTEGER NOT NULL,
    metadata       TEXT    NOT NULL,
    fencing_token  INTEGER NOT NULL,
    slot_limit     INTEGER NOT NULL, -- 0: no limit (plain shared)
    updated_seq    INTEGER NOT NULL,
    PRIMARY KEY (lock_name, request_id)
);
