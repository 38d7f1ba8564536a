-- The earliest at among the events of a snapshot's block: as on SQLite
-- (0012 there, which also adds the (lock_name, seq) index this set has
-- had since 0003).
ALTER TABLE snapshots ADD COLUMN min_at text;

ALTER TABLE snapshots DISABLE TRIGGER snapshots_no_update;
UPDATE snapshots SET min_at = (SELECT min(at) FROM events WHERE seq > snapshots.seq - 10000 AND seq <= snapshots.seq);
ALTER TABLE snapshots ENABLE TRIGGER snapshots_no_update;
