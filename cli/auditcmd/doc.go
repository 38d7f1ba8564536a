// Package auditcmd holds the commands that check, prove, sign and keep
// the log: verify, prove, verify-proof, keygen, checkpoint, trust, export
// (and --follow), import, project, archive, prune, unprune and metrics.
// Each command is an options struct and a run function.
package auditcmd
