package ledger

// When a root may get a new ledger, and when ledger.db is not ours.
//
// A ledger is created only where no trace of one exists, because a new
// ledger restarts the chain and the fencing tokens at 1: a client that
// holds token 812 from the lost ledger would be overtaken by token 1's
// successors. The traces:
//
//   - writer.flock records a ledger id. The process that creates a ledger
//     (or first opens an older root with this version) writes the id into
//     writer.flock under the writer mutex, after the id is committed. An
//     empty writer.flock is no trace: it is how a creator that has not
//     finished, or died before finishing, leaves it, and a later creator
//     takes the mutex and finishes the job.
//   - ledger.db is missing or empty while ledger.db-wal holds bytes: the
//     commits of a ledger whose main file was lost (SQLite, given an empty
//     database file, would delete that WAL).
//   - the locks directory holds a file only a ledger writes: a journal
//     (.NAME.lock.pending, .NAME.lock.swap), or a lock file in exactly the
//     layout the ledger renders (events.Record.File) whose lock_name is
//     its file name. A tower-fleet tool that writes that same layout into
//     the directory before any ledger exists is indistinguishable and is
//     taken for a trace too (fail safe; the message says how to proceed).
//
// A ledger.db that is not an SQLite file, or an SQLite database whose
// tables are not the ledger's, is another application's: nothing is added
// to it, not even the switch to WAL.

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
)

// traceOfALedger says what in the root shows that it held a ledger, given
// the database files and writer.flock's marker; nil when nothing does.
func (l *Ledger) traceOfALedger(d dbFile, marker string) error {
	what := "is missing"
	if _, err := l.files.Lstat(DBFile); err == nil {
		what = "is empty"
		if d.size > 0 {
			what = "holds no ledger"
		}
	}
	refuse := func(found string) error {
		return fmt.Errorf("ledger: %s %s but %s: %w; refusing to start a new one (fencing tokens would restart at 1). Restore ledger.db from a backup, or use a new --root",
			d.path, what, found, ErrLedgerGone)
	}
	mux := filepath.Join(l.root, WriterMux)
	switch {
	case marker != "":
		return refuse(fmt.Sprintf("%s records ledger %s", mux, clip(marker, 64)))
	case d.empty() && d.wal > 0:
		return refuse(fmt.Sprintf("%s-wal holds %d bytes: the commits of a ledger whose database file was lost", d.path, d.wal))
	}
	found, err := l.ledgerTrace()
	if err != nil {
		return fmt.Errorf("ledger: locks directory: %w", err)
	}
	if found != "" {
		return refuse(found + " (if no ledger ever lived here and the files are another tool's, move them out of the locks directory, run lockledger once, and move them back)")
	}
	return nil
}

// ledgerTrace names the first file in the locks directory that only a
// ledger writes, "" when there is none (see the comment at the top). A
// locks directory that cannot be read shows none; the writable open
// refuses it afterwards.
func (l *Ledger) ledgerTrace() (string, error) {
	if l.files.Broken() != nil {
		return "", nil
	}
	entries, err := l.files.Entries()
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, ".") && (strings.HasSuffix(n, ".lock.pending") || strings.HasSuffix(n, ".lock.swap")) {
			return fmt.Sprintf("%s is a lock file journal, which only a ledger writes", filepath.Join(l.files.LocksDir(), n)), nil
		}
		name, ok := strings.CutSuffix(n, ".lock")
		if !ok || strings.HasPrefix(n, ".") {
			continue
		}
		st, err := l.files.Read(name)
		if err != nil || !st.Exists {
			continue // not a file the ledger wrote
		}
		rec, err := ParseLockFile(st.Data)
		if err == nil && rec.LockName == name && bytes.Equal(rec.File(), st.Data) {
			return fmt.Sprintf("%s is a lock file in the layout the ledger writes", filepath.Join(l.files.LocksDir(), n)), nil
		}
	}
	return "", nil
}
