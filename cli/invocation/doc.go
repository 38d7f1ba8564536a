// Package invocation is what every command of one lockledger run shares:
// the persistent flags (Globals) and the streams, the logger and --jq they
// set up, the root and the opening of its ledger (signing key, trust store
// and witnesses included), the one read snapshot of a reading command,
// the exit codes and the errors that carry one, the checks of positional
// arguments, the parsing of durations and times every command takes, and
// Listing, what the root knows of a command without building it.
//
// docs/architecture.md shows where this package sits among the others.
package invocation
