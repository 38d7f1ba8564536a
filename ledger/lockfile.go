package ledger

import (
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/formats"
	"github.com/lockledger/lockledger/internal/lockfile"
)

// The lock files in ROOT/locks are kept by internal/lockfile, which places,
// replaces and removes each through a journal (.NAME.lock.pending). The
// journal's fsync starts once it is placed and runs beside the rest of the
// decision and the ledger's commit (see writeTx.addJournal and
// Ledger.commitWith), and the journal is removed only after both; a journal
// found later is the trace of a process that died or lost power in
// between, and interpret undoes or finishes it: a lock file that shares
// the journal's inode is ours, and unless the committed row carries exactly
// its bytes it is dropped and, where the ledger holds the lock, rewritten
// from the row. All of this runs under the writer mutex, so one process at
// a time touches the directory.

// errFileExists: placing a new lock file found one already there.
var errFileExists = lockfile.ErrExists

// unreadableFile describes f as a lock file no reader can parse.
func unreadableFile(f lockfile.State) *UnreadableFile {
	return &UnreadableFile{Path: f.Path, SizeBytes: f.Size, Modified: f.Mtime.UTC().Format(time.RFC3339)}
}

// ParseLockFile parses a lock file in the v1 layout (formats.ParseRecord).
func ParseLockFile(data []byte) (events.Record, error) { return formats.ParseRecord(data) }
