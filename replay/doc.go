// Package replay reads the event log, and only the event log, of a lock
// ledger: it folds events into lock state (now or as of any instant),
// streams events for timelines and exports, and verifies the hash chain.
//
// It never reads the locks table or the lock files: those are projections,
// and verify compares them against what replay derives. Every function
// streams rows (rows.Next) and keeps state per lock, never per event, so
// memory is bounded by the number of locks however long the log is.
//
// "As of T" means every event with at <= T, applied in seq order (order is
// by seq, never by timestamp: clocks of many hosts disagree, seq does not).
package replay
