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

// parent opens p's directory; ok is false when there is none.
func parent(p string) (d at, ok bool, err error) {
	dir := filepath.Dir(p)
	fd, err := unix.Open(dir, openPath|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err == unix.ENOENT {
		return at{fd: -1, path: dir}, false, nil
	}
	if err != nil {
		return at{fd: -1, path: dir}, false, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return at{fd: fd, path: dir}, true, nil
}

// ReadFile returns the lock file at p without following a symlink; a
// missing one is State{}.
func ReadFile(p string) (State, error) {
	d, ok, err := parent(p)
	if !ok {
		return State{}, err
	}
	defer closeFD(d.fd)
	return d.read(filepath.Base(p))
}

// PlaceFile puts a new lock file at p without clobbering an existing one
// (ErrExists). It returns the journal, open.
func PlaceFile(p string, data []byte) (*os.File, error) {
	d, ok, err := parent(p)
	if !ok {
		if err == nil {
			err = &os.PathError{Op: "open", Path: d.path, Err: os.ErrNotExist}
		}
		return nil, err
	}
	defer closeFD(d.fd)
	return d.place(filepath.Base(p), data)
}

// ReplaceFile atomically swaps the file at p for one holding data. It
// returns the journal, open.
func ReplaceFile(p string, data []byte) (*os.File, error) {
	d, ok, err := parent(p)
	if !ok {
		if err == nil {
			err = &os.PathError{Op: "open", Path: d.path, Err: os.ErrNotExist}
		}
		return nil, err
	}
	defer closeFD(d.fd)
	return d.replace(filepath.Base(p), data)
}

// RemoveFile deletes the file at p if it still holds exactly data.
func RemoveFile(p string, data []byte) error {
	d, ok, err := parent(p)
	if !ok {
		return err
	}
	defer closeFD(d.fd)
	return d.remove(filepath.Base(p), data)
}

// RemoveIfExists deletes the file at p; a missing one is fine.
func RemoveIfExists(p string) error {
	d, ok, err := parent(p)
	if !ok {
		return err
	}
	defer closeFD(d.fd)
	return d.unlink(filepath.Base(p))
}

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
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
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
