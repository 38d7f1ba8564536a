-- The event log: the only source of truth. Its columns are part of the
-- contract: auditors query them with plain sqlite3.
CREATE TABLE events (
    seq        INTEGER PRIMARY KEY,
    event_id   TEXT    NOT NULL UNIQUE,
    type       TEXT    NOT NULL,
    lock_name  TEXT    NOT NULL,
    request_id TEXT    NOT NULL,
    actor      TEXT    NOT NULL,
    at         TEXT    NOT NULL,
    body       BLOB    NOT NULL,
    prev_hash  TEXT    NOT NULL,
    hash       TEXT    NOT NULL
);

CREATE INDEX events_lock_at    ON events (lock_name, at);
CREATE INDEX events_actor_at   ON events (actor, at);
CREATE INDEX events_type_at    ON events (type, at);
CREATE INDEX events_request_id ON events (request_id);
CREATE INDEX events_at         ON events (at);

CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN
    SELECT RAISE(ABORT, 'lockledger: events are append-only (UPDATE refused)');
END;

CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN
    SELECT RAISE(ABORT, 'lockledger: events are append-only (DELETE refused)');
END;

-- Projection of the event log: one row per lock ever seen. held = 0 keeps
-- the last holder, so that a leftover lock file of ours can be told from a
-- foreign one.
CREATE TABLE locks (
    lock_name      TEXT    PRIMARY KEY,
    held           INTEGER NOT NULL,
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
    updated_seq    INTEGER NOT NULL,
    file           BLOB    NOT NULL
);

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
