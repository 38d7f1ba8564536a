-- The RFC 6962 Merkle tree over the events (golang.org/x/mod/sumdb/tlog),
-- so that tree hashes and proofs read O(log n) rows. Row seq holds the
-- hashes tlog.StoredHashes returns for record seq-1 (the event's leaf,
-- tlog.RecordHash of its body, then one hash per subtree it completes),
-- 32 bytes each, concatenated; they are appended in the transaction that
-- appends the event. Package checkpoint documents the layout.
CREATE TABLE tlog_hashes (
    seq    INTEGER PRIMARY KEY,
    hashes BLOB    NOT NULL
);

CREATE TRIGGER tlog_hashes_no_update BEFORE UPDATE ON tlog_hashes
BEGIN
    SELECT RAISE(ABORT, 'lockledger: tlog_hashes are append-only (UPDATE refused)');
END;

-- Only the hashes of events that no longer exist (a cut tail, accepted by
-- `project --accept-broken-chain`) may go; verify reports them until then.
CREATE TRIGGER tlog_hashes_no_delete BEFORE DELETE ON tlog_hashes
WHEN OLD.seq <= (SELECT coalesce(max(seq), 0) FROM events)
BEGIN
    SELECT RAISE(ABORT, 'lockledger: tlog_hashes are append-only (DELETE refused)');
END;

-- Signed tree heads (C2SP tlog-checkpoint notes) over the first size
-- events, as signed; the same text goes to every witness.
CREATE TABLE checkpoints (
    id         INTEGER PRIMARY KEY,
    size       INTEGER NOT NULL,
    root       TEXT    NOT NULL, -- base64, as in the note
    note       TEXT    NOT NULL, -- the signed note, verbatim
    key_name   TEXT    NOT NULL,
    created_at TEXT    NOT NULL
);

CREATE INDEX checkpoints_size ON checkpoints (size);

CREATE TRIGGER checkpoints_no_update BEFORE UPDATE ON checkpoints
BEGIN
    SELECT RAISE(ABORT, 'lockledger: checkpoints are append-only (UPDATE refused)');
END;

CREATE TRIGGER checkpoints_no_delete BEFORE DELETE ON checkpoints
BEGIN
    SELECT RAISE(ABORT, 'lockledger: checkpoints are append-only (DELETE refused)');
END;
