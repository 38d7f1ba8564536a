// Package storagecheck judges the database a ledger is kept in as its
// engine sees it, apart from what the rows say: SQLite's own check of the
// file (quick_check, or integrity_check), and the append-only triggers of
// either engine against the ones the migrations create. Problems go into a
// verify.Report as KindStorage and KindTrigger.
package storagecheck
