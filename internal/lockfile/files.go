package lockfile

// Lock files at any path (the --file targets of other tools' formats,
// outside ROOT): the same journaled changes as in the locks directory,
// made relative to the file's directory, opened once per change.

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// JournalOf and SwapOf name the hidden helper files beside a lock path p.
func JournalOf(p string) string { return filepath.Join(filepath.Dir(p), journalName(filepath.Base(p))) }
func SwapOf(p string) string    { return filepath.Join(filepath.Dir(p), swapName(filepath.Base(p))) }

// inParent runs f on p's directory, opened once, and p's name in it.
// Where the directory is missing, f does not run and it returns missing.
func inParent(p string, missing error, f func(d at, name string) error) error {
	dir := filepath.Dir(p)
	fd, err := unix.Open(dir, openPath|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err == unix.ENOENT {
		return missing
	}
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	return f(at{fd: fd, path: dir}, filepath.Base(p))
}

// noParent is the error of a write at p whose directory is missing.
func noParent(p string) error {
	return &os.PathError{Op: "open", Path: filepath.Dir(p), Err: os.ErrNotExist}
}

// ReadFile returns the lock file at p without following a symlink; a
// missing one is State{}.
func ReadFile(p string) (s State, err error) {
	err = inParent(p, nil, func(d at, name string) (err error) { s, err = d.read(name); return err })
	return s, err
}

// PlaceFile puts a new lock file at p without clobbering an existing one
// (ErrExists), its missing directories made first (0700). It returns the
// journal, open.
func PlaceFile(p string, data []byte) (j *os.File, err error) {
	if err := os.MkdirAll(filepath.Dir(p), PrivateDirMode); err != nil {
		return nil, err
	}
	err = inParent(p, noParent(p), func(d at, name string) (err error) { j, err = d.place(name, data); return err })
	return j, err
}

// ReplaceFile atomically swaps the file at p for one holding data. It
// returns the journal, open.
func ReplaceFile(p string, data []byte) (j *os.File, err error) {
	err = inParent(p, noParent(p), func(d at, name string) (err error) { j, err = d.replace(name, data); return err })
	return j, err
}

// RemoveFile deletes the file at p if it still holds exactly data.
func RemoveFile(p string, data []byte) error {
	return inParent(p, nil, func(d at, name string) error { return d.remove(name, data) })
}

// RemoveIfExists deletes the file at p; a missing one is fine.
func RemoveIfExists(p string) error { return inParent(p, nil, at.unlink) }

// RecoverFile undoes or finishes a change at lock path p that a process
// left behind (a journal beside it): a file that shares the journal's inode
// is the change, dropped unless committed (the bytes the committed holder
// projects there; nil for none) is exactly the journal's. A committed file
// that is missing is placed again where restore agrees.
func RecoverFile(p string, committed []byte, restore func() bool) error {
	journal, err := ReadFile(JournalOf(p))
	if err != nil {
		return err
	}
	file, err := ReadFile(p)
	if err != nil {
		return err
	}
	if journal.Exists {
		if !bytes.Equal(journal.Data, committed) && file.Exists && file.Ino == journal.Ino {
			if err := RemoveIfExists(p); err != nil {
				return err
			}
			file = State{}
		}
		if err := RemoveIfExists(JournalOf(p)); err != nil {
			return err
		}
		if err := RemoveIfExists(SwapOf(p)); err != nil {
			return err
		}
	}
	if committed == nil || file.Exists || !restore() {
		return nil
	}
	j, err := PlaceFile(p, committed)
	if errors.Is(err, ErrExists) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := SyncClose(j); err != nil {
		return err
	}
	return RemoveIfExists(JournalOf(p))
}
