-- As on SQLite (0013 there): the head's check before every append reads
-- the largest updated_seq of locks and lock_holders through an index, not
-- by reading every row of both tables.
--
-- A ledger migrated from before 0008 in the same transaction has the
-- projection's deferred checks of the rows 0008 moved still pending, and
-- PostgreSQL builds no index on a table with pending trigger events: they
-- run here, as they would at the commit.
SET CONSTRAINTS ALL IMMEDIATE;
CREATE INDEX locks_updated_seq ON locks (updated_seq);
CREATE INDEX lock_holders_updated_seq ON lock_holders (updated_seq);
