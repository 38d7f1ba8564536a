-- Shared holders and semaphore slots: one row per holder (lock name and
-- request id), the projection of lock_acquired / lock_stolen events with
-- mode "shared". A holder's row goes when it is released or its slot taken.
-- Exclusive holders stay in locks, whose row a shared holder never touches.
CREATE TABLE lock_holders (
    lock_name      text    NOT NULL,
    request_id     text    NOT NULL,
    actor          text    NOT NULL,
    intent         text    NOT NULL,
    intent_version text    NOT NULL,
    host_id        text    NOT NULL,
    pid            bigint  NOT NULL,
    pid_start      text    NOT NULL,
    boot_id        text    NOT NULL,
    created_at     text    NOT NULL,
    heartbeat_at   text    NOT NULL,
    ttl_seconds    bigint  NOT NULL,
    metadata       text    NOT NULL,
    fencing_token  bigint  NOT NULL,
    slot_limit     bigint  NOT NULL, -- 0: no limit (plain shared)
    updated_seq    bigint  NOT NULL,
    PRIMARY KEY (lock_name, request_id)
);
