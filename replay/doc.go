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
//
// Bodies are decoded by a decoder of its own (decodeFastString, decode.go), with
// encoding/json for any body it does not take. It is a speed-only second
// copy, kept because `make bench`'s row "`replay --as-of T --json` on N
// events with replay's own decoder vs encoding/json alone" (group copies,
// internal/cmd/bench/copies.go) shows the command at least 1.3x faster
// with it; the build tag lockledger_nofastdecode leaves it out for that
// row. Below 1.3x, it goes.
package replay
