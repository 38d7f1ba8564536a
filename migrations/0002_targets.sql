-- Extra lock files (other tools' formats) a holding projects: a JSON array
-- of {"format","path"}, as recorded in its lock_acquired / lock_stolen event.
ALTER TABLE locks ADD COLUMN targets TEXT NOT NULL DEFAULT '[]';
