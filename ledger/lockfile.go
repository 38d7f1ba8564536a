package ledger

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/lockfile"
	"github.com/lockledger/lockledger/schema"
)

// The lock files in ROOT/locks are kept by internal/lockfile, which places,
// replaces and removes each through a journal (.NAME.lock.pending). The
// journal's fsync runs at the same time as the ledger's commit (see
// writeTx.commit), and the journal is removed only after both; a journal
// found later is the trace of a process that died or lost power in
// between, and interpret undoes or finishes it: a lock file that shares
// the journal's inode is ours, and unless the committed row carries exactly
// its bytes it is dropped and, where the ledger holds the lock, rewritten
// from the row. All of this runs under the writer mutex, so one process at
// a time touches the directory.

// maxLockFile bounds how much of a lock file is read; anything larger is
// not a lock record and counts as corrupt.
const maxLockFile = lockfile.MaxSize

// errFileExists: placing a new lock file found one already there.
var errFileExists = lockfile.ErrExists

// unreadableFile describes f as a lock file no reader can parse.
func unreadableFile(f lockfile.State) *UnreadableFile {
	return &UnreadableFile{Path: f.Path, Size: f.Size, Modified: f.Mtime.UTC()}
}

// ParseLockFile parses a lock file written by any tower-fleet v1 tool.
// The file must satisfy the v1 schema; metadata values that are not
// strings are kept as their JSON text. Both the file and the record
// rendered again in the v1 layout (Record.File) must fit in maxLockFile.
func ParseLockFile(data []byte) (events.Record, error) {
	if len(data) > maxLockFile {
		return events.Record{}, fmt.Errorf("lock file larger than %d bytes", maxLockFile)
	}
	if err := schema.Validate(schema.LockFile, data); err != nil {
		return events.Record{}, err
	}
	var raw struct {
		events.Record
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return events.Record{}, err
	}
	rec := raw.Record
	rec.Metadata = map[string]string{}
	for k, v := range raw.Metadata {
		var s string
		if json.Unmarshal(v, &s) == nil {
			rec.Metadata[k] = s
		} else {
			rec.Metadata[k] = strings.TrimSpace(string(v))
		}
	}
	// The ledger may write back what it accepts (Record.File), and must be
	// able to read that back too.
	if n := len(rec.File()); n > maxLockFile {
		return events.Record{}, fmt.Errorf("lock file larger than %d bytes once written in the v1 layout (%d bytes, from %d)", maxLockFile, n, len(data))
	}
	return rec, nil
}
