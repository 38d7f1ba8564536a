-- A REPLACE (INSERT OR REPLACE, REPLACE INTO) of an event whose seq or
-- event_id is taken deletes the old row without firing events_no_delete:
-- SQLite fires DELETE triggers for a REPLACE only under recursive_triggers.
-- An UPSERT's DO UPDATE is refused by events_no_update, but this trigger
-- refuses it first. The ledger only ever appends after the last seq, with
-- a new event_id.
CREATE TRIGGER events_no_replace BEFORE INSERT ON events
WHEN NEW.seq <= (SELECT max(seq) FROM events)
    OR EXISTS (SELECT 1 FROM events WHERE event_id = NEW.event_id)
BEGIN
    SELECT RAISE(ABORT, 'lockledger: events are append-only (an INSERT must follow the last seq, with a new event_id)');
END;
