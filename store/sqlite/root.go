package sqlite

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockledger/lockledger/internal/lockfile"
	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/store"
)

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

// File is the database's name in the root.
const File = "ledger.db"

// Root is the directory ledger.db lives in, as the ledger opened it: its
// files through the root's descriptors, and its writer mutex (nil for a
// read-only open).
type Root struct {
	Dir   string
	Files *lockfile.Dir
	Mutex *lockfile.Mutex
	// LedgerFile reports whether data, the lock file of lock name, is in
	// the layout only a ledger writes.
	LedgerFile func(name string, data []byte) bool
}

// Identify reads the ledger's id from an opened database, giving a new
// ledger one where newLedger allows it.
type Identify func(ctx context.Context, s *Store, newLedger func() error) (id string, err error)

// MustExist fails with store.ErrNoLedger where there is no ledger to open, or
// with store.ErrLedgerGone where the root shows that it held one (see the top of this file),
// before anything in the root is created.
func (r Root) MustExist() error {
	d, err := r.statDB()
	if err != nil || !d.empty() {
		return err
	}
	marker, err := r.Files.Marker()
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	if err := r.traceOfALedger(d, marker); err != nil {
		return err
	}
	return &store.NoLedgerError{Where: r.Dir, Hint: "check --root or LOCKLEDGER_ROOT"}
}

// birth is what an open may do about the ledger's identity: allowed says
// whether a new ledger may start in this root (nil error: yes), marker is
// the id writer.flock records ("" for none).
type birth struct {
	marker  string
	allowed func() error
}

// OpenWritable opens ledger.db for writing, creating the ledger only where
// no trace of one exists (root.go). A root whose writer.flock records its
// ledger and whose database has content is opened straight away; any
// other is looked at again under the writer mutex, so that of concurrent
// first opens one creates the ledger and the others find it made.
func (r Root) OpenWritable(ctx context.Context, cfg Config, patience time.Duration, create bool, identify Identify) (*Store, error) {
	dbPath := cfg.Path
	marker, err := r.Mutex.Marker()
	if err != nil {
		return nil, err
	}
	d, err := r.statDB()
	if err != nil {
		return nil, err
	}
	if d.empty() || marker == "" {
		unlock, err := r.lockBirth(ctx, patience)
		if err != nil {
			return nil, fmt.Errorf("ledger: open %s: %w", dbPath, err)
		}
		defer unlock()
		if marker, err = r.Mutex.Marker(); err != nil {
			return nil, err
		}
		if d, err = r.statDB(); err != nil {
			return nil, err
		}
	}
	b := birth{marker: marker, allowed: func() error { return r.traceOfALedger(d, marker) }}
	if d.empty() {
		if err := b.allowed(); err != nil {
			return nil, err
		}
		if !create {
			return nil, &store.NoLedgerError{Where: r.Dir, Hint: "check --root or LOCKLEDGER_ROOT"}
		}
		if err := r.Files.CreateFile(File); err != nil {
			return nil, fmt.Errorf("ledger: %w", err)
		}
	}
	cfg.NewLedger = b.allowed
	st, err := Open(ctx, cfg, patience)
	if err != nil {
		return nil, err
	}
	id, err := identify(ctx, st, b.allowed)
	if err != nil {
		st.Close()
		return nil, err
	}
	if b.marker != "" && b.marker != id {
		st.Close()
		return nil, fmt.Errorf("ledger: %s is ledger %s but %s records ledger %s: %w; refusing to write to another ledger in its place (fencing tokens could go backwards). Restore this root's ledger.db, or use a new --root",
			dbPath, id, filepath.Join(r.Dir, lockfile.MutexName), termtext.Clip(b.marker, 64), store.ErrLedgerGone)
	}
	if err := store.BackfillTree(ctx, st, cfg.Log); err != nil {
		st.Close()
		return nil, err
	}
	if marker == "" {
		if err := r.Mutex.SetMarker(id); err != nil {
			st.Close()
			return nil, err
		}
	}
	return st, nil
}

// lockBirth takes the writer mutex to create the ledger, or to finish its
// creation, waiting up to patience. A ledger that another opener made
// meanwhile (writer.flock records it and ledger.db holds it) needs no
// mutex: it is opened as one found made, however many openers queue for
// the mutex still.
func (r Root) lockBirth(ctx context.Context, patience time.Duration) (func(), error) {
	deadline := time.Now().Add(patience)
	for {
		unlock, err := r.Mutex.Lock(ctx, max(min(time.Until(deadline), 50*time.Millisecond), 0), 5*time.Millisecond)
		if !errors.Is(err, lockfile.ErrBusy) {
			return unlock, err
		}
		marker, merr := r.Mutex.Marker()
		d, derr := r.statDB()
		if merr == nil && derr == nil && marker != "" && !d.empty() {
			return func() {}, nil
		}
		if !time.Now().Before(deadline) {
			return nil, err
		}
	}
}

// dbFile is what lies at ROOT/ledger.db and beside it.
type dbFile struct {
	path string
	size int64 // 0 when missing
	wal  int64 // size of ledger.db-wal, 0 when missing
}

func (d dbFile) empty() bool { return d.size == 0 }

// lstatError is the error of looking at ROOT/ledger.db. One this user
// may not make is most often another user's private root, named by a
// shared LOCKLEDGER_ROOT: it says whose, and what a shared root is.
func (r Root) lstatError(err error) error {
	if errors.Is(err, fs.ErrPermission) {
		err = lockfile.Unreadable(r.Dir, err)
	}
	return fmt.Errorf("ledger: %w", err)
}

// statDB looks at ROOT/ledger.db without handing it to SQLite: a symlink
// or other non-regular file, and a file that does not start with SQLite's
// header, are refused.
func (r Root) statDB() (dbFile, error) {
	path := filepath.Join(r.Dir, File)
	d := dbFile{path: path}
	fi, err := r.Files.Lstat(File)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return d, r.lstatError(err)
	case !fi.Mode().IsRegular():
		return d, fmt.Errorf("ledger: %w", &lockfile.UnsafePathError{Path: path, Reason: "is not a regular file"})
	default:
		d.size = fi.Size()
	}
	if d.size > 0 {
		head, err := r.Files.ReadHead(File, len(Header))
		if err != nil {
			return d, fmt.Errorf("ledger: %w", err)
		}
		if string(head) != Header {
			return d, fmt.Errorf("ledger: %s: %w: the file is not a database (it does not start with SQLite's header); lockledger adds nothing to it and creates no ledger over it",
				path, store.ErrNotALedger)
		}
	}
	if wi, err := r.Files.Lstat(File + "-wal"); err == nil && wi.Mode().IsRegular() {
		d.wal = wi.Size()
	}
	return d, nil
}

// Precheck refuses, before anything is created in the root (writer.flock
// and locks/ included), what OpenWritable would refuse anyway where it can
// tell without the writer mutex: a ledger.db that is not an SQLite file;
// one that is another application's where no writer.flock says a ledger
// ever opened it (the directory may well be that application's); and an
// empty or missing ledger.db beside a trace of a ledger. A concurrent
// first open makes ledger.db non-empty before it leaves any trace, so a
// trace seen while ledger.db is still empty is a lost ledger's.
func (r Root) Precheck(ctx context.Context, dbPath string, busy time.Duration) error {
	d, err := r.statDB()
	if err != nil {
		return err
	}
	if d.empty() {
		marker, err := r.Files.Marker()
		if err != nil {
			return fmt.Errorf("ledger: %w", err)
		}
		terr := r.traceOfALedger(d, marker)
		if terr == nil {
			return nil
		}
		if again, err := r.statDB(); err != nil || !again.empty() {
			return err // a ledger was created meanwhile
		}
		return terr
	}
	if ok, err := r.Files.Exists(lockfile.MutexName); ok || err != nil {
		return nil
	}
	return CheckForeign(ctx, dbPath, busy)
}

// OpenExisting opens an existing ledger for reading. SQLite reads a WAL
// database through its -shm index, which it creates next to the database;
// in a directory it cannot write (an archived copy, read-only media) it
// reads the file as immutable instead, which is exact only when no commit
// is waiting in ledger.db-wal and no writer has it open (no -shm), so
// those cases are refused with the reason. An immutable read assumes that
// no writer starts on the file while it reads. A database with no ledger
// yet fails with store.ErrNoLedger, or with store.ErrLedgerGone where the
// root shows that it held one.
func (r Root) OpenExisting(ctx context.Context, cfg Config) (*Store, error) {
	path := cfg.Path
	fi, err := r.Files.Lstat(File)
	if err != nil {
		return nil, r.lstatError(err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("ledger: %w", &lockfile.UnsafePathError{Path: path, Reason: "is not a regular file"})
	}
	st, err := r.openReadOnly(ctx, cfg, false)
	if err == nil || !CannotIndexWAL(err) {
		return st, err
	}
	if _, serr := r.Files.Lstat(File + "-shm"); serr == nil {
		return nil, fmt.Errorf("ledger: %s cannot be opened read-only although %s exists (a writer may have it open, so it cannot be read as immutable): %w",
			path, filepath.Base(path)+"-shm", err)
	}
	wal, werr := r.Files.Lstat(File + "-wal")
	switch {
	case werr == nil && wal.Size() > 0:
		return nil, fmt.Errorf("ledger: %s is read-only and %s holds commits not yet copied into %s; SQLite needs to create %s to read them: make the root writable, or read a writable copy of it (%w)",
			filepath.Dir(path), filepath.Base(path)+"-wal", filepath.Base(path), filepath.Base(path)+"-shm", err)
	case werr != nil && !errors.Is(werr, fs.ErrNotExist):
		return nil, fmt.Errorf("ledger: %w", werr)
	}
	st, ierr := r.openReadOnly(ctx, cfg, true)
	if ierr != nil && CannotIndexWAL(ierr) {
		return nil, fmt.Errorf("%w (read as immutable: %w)", err, ierr)
	}
	return st, ierr
}

// openReadOnly is OpenReadOnly, with a missing ledger explained by the
// root's traces of one.
func (r Root) openReadOnly(ctx context.Context, cfg Config, immutable bool) (*Store, error) {
	st, err := OpenReadOnly(ctx, cfg, immutable)
	if errors.Is(err, store.ErrNoLedger) {
		d, derr := r.statDB()
		marker, merr := r.Files.Marker()
		if derr == nil && merr == nil {
			if terr := r.traceOfALedger(d, marker); terr != nil {
				return nil, terr
			}
		}
		return nil, &store.NoLedgerError{Where: r.Dir, Hint: "its ledger.db holds no ledger yet"}
	}
	return st, err
}

// traceOfALedger says what in the root shows that it held a ledger, given
// the database files and writer.flock's marker; nil when nothing does.
func (r Root) traceOfALedger(d dbFile, marker string) error {
	what := "is missing"
	if _, err := r.Files.Lstat(File); err == nil {
		what = "is empty"
		if d.size > 0 {
			what = "holds no ledger"
		}
	}
	refuse := func(found string) error {
		return fmt.Errorf("ledger: %s %s but %s: %w; refusing to start a new one (fencing tokens would restart at 1). Restore ledger.db from a backup, or use a new --root",
			d.path, what, found, store.ErrLedgerGone)
	}
	mux := filepath.Join(r.Dir, lockfile.MutexName)
	switch {
	case marker != "":
		return refuse(fmt.Sprintf("%s records ledger %s", mux, termtext.Clip(marker, 64)))
	case d.empty() && d.wal > 0:
		return refuse(fmt.Sprintf("%s-wal holds %d bytes: the commits of a ledger whose database file was lost", d.path, d.wal))
	}
	found, err := r.ledgerTrace()
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
func (r Root) ledgerTrace() (string, error) {
	if r.Files.Broken() != nil {
		return "", nil
	}
	entries, err := r.Files.Entries()
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, ".") && (strings.HasSuffix(n, ".lock.pending") || strings.HasSuffix(n, ".lock.swap")) {
			return fmt.Sprintf("%s is a lock file journal, which only a ledger writes", filepath.Join(r.Files.LocksDir(), n)), nil
		}
		name, ok := strings.CutSuffix(n, ".lock")
		if !ok || strings.HasPrefix(n, ".") {
			continue
		}
		st, err := r.Files.Read(name)
		if err != nil || !st.Exists {
			continue // not a file the ledger wrote
		}
		if r.LedgerFile(name, st.Data) {
			return fmt.Sprintf("%s is a lock file in the layout the ledger writes", filepath.Join(r.Files.LocksDir(), n)), nil
		}
	}
	return "", nil
}

// CheckOwners refuses a root that another user can write (see
// lockfile.Dir.CheckOwners), looking at ledger.db, its -wal and -shm as
// well as ROOT, ROOT/locks and writer.flock. asked is the group asked for
// with --group, nil for none.
func (r Root) CheckOwners(asked *int) error {
	if err := r.Files.CheckOwners(asked, File, File+"-wal", File+"-shm"); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	return nil
}
