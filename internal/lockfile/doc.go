// Package lockfile holds lockledger's file layer: the files it keeps in a
// root directory (ROOT/locks/NAME.lock and their journals, writer.flock,
// ledger.pin, ledger.db's first creation), the modes of a group root,
// the check of who besides the caller can write a root (owner.go), the
// writer mutex and the watch that wakes a waiter when a lock file
// changes.
//
// Everything under ROOT is reached through descriptors opened once (Open):
// one for ROOT and one for ROOT/locks, each opened without following a
// symlink, and every file is then opened, linked, renamed or removed
// relative to them (openat2 with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, or
// openat with O_NOFOLLOW; on macOS always the latter, on one component).
// The watch is inotify on Linux and a kqueue on macOS. No path under ROOT is walked twice, so another
// user who swaps ROOT/locks for a symlink after the open cannot redirect
// a write.
//
// The API mirrors os where it can and reports misuse loudly: a name with
// a slash, a write through a Dir that has no locks directory, a symlink
// where a file belongs all fail with an *UnsafePathError naming the path.
//
// docs/architecture.md shows where this package sits among the others.
package lockfile
