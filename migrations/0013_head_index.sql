-- The head of the log is checked before every append against the largest
-- seq the locks and their holders record (a table that shows seqs past the
-- last event means the log's tail is gone). Both tables keep a row for every
-- lock ever named, so without an index that check reads them whole: a
-- write's cost would grow with every lock name the ledger has seen. With
-- these, it is one look at each index's end.
CREATE INDEX locks_updated_seq ON locks (updated_seq);
CREATE INDEX lock_holders_updated_seq ON lock_holders (updated_seq);
