// Package proc holds what lockledger reads of, and does to, the processes
// of this host: whether a pid is alive (Liveness), /proc/PID/stat, the
// boot id and this machine's key, the processes of a job (those of this user carrying its
// LOCKLEDGER_REQUEST_ID, and, for a subreaper, those below it), stopping
// them, a child started and waited for on a locked thread (StartLocked), and
// the users processes run as.
//
// docs/architecture.md shows where this package sits among the others.
package proc
