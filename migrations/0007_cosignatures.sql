-- Cosignatures of the ledger's checkpoints by external witnesses
-- (c2sp.org/tlog-witness, c2sp.org/tlog-cosignature): each row is one
-- witness's cosignature of one checkpoint, kept as a signed note of its
-- own (the checkpoint text, a blank line, the witness's signature line),
-- so that verify checks it with the witness's key alone. Append-only, as
-- the checkpoints are.
CREATE TABLE cosignatures (
    id          INTEGER PRIMARY KEY,
    size        INTEGER NOT NULL,
    root        TEXT    NOT NULL, -- base64, as in the note
    witness     TEXT    NOT NULL, -- the witness key's name
    key         TEXT    NOT NULL, -- the witness's verifier key, as the writer was given it
    url         TEXT    NOT NULL,
    note        TEXT    NOT NULL,
    cosigned_at TEXT    NOT NULL  -- the cosignature's own timestamp
);

CREATE INDEX cosignatures_key_size ON cosignatures (key, size);

CREATE TRIGGER cosignatures_no_update BEFORE UPDATE ON cosignatures
BEGIN
    SELECT RAISE(ABORT, 'lockledger: cosignatures are append-only (UPDATE refused)');
END;

CREATE TRIGGER cosignatures_no_delete BEFORE DELETE ON cosignatures
BEGIN
    SELECT RAISE(ABORT, 'lockledger: cosignatures are append-only (DELETE refused)');
END;

-- A REPLACE or an UPSERT deletes without firing the DELETE trigger (see
-- 0006): refused before the conflict is resolved.
CREATE TRIGGER cosignatures_no_replace BEFORE INSERT ON cosignatures
WHEN EXISTS (SELECT 1 FROM cosignatures WHERE id = NEW.id)
BEGIN
    SELECT RAISE(ABORT, 'lockledger: cosignatures are append-only (an INSERT must not replace a row)');
END;
