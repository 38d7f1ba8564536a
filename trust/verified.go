package trust

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// VerifiedDir holds what this user's verifies found intact: one file per
// ledger and root, DIR/<ledger id>@<root>.verified (named as Heads names
// its heads), written by verify and read by the next, which then checks
// only the events after it. It is the verifier's own record, outside
// every root, so that whoever can rewrite a database cannot choose what
// the next verify skips.
func (s *Store) VerifiedDir() string { return filepath.Join(s.dir, "verified") }

// Verified are the records of VerifiedDir for one root.
type Verified struct {
	Dir  string
	Root string // the root's resolved path
}

// Path is the file of ledger id's record at Root.
func (v Verified) Path(id string) string {
	return filepath.Join(v.Dir, Heads{Root: v.Root}.name(id)+".verified")
}

// Read is ledger id's record, nil when there is none. A file that is not
// this user's regular file, or that others can write, is refused
// (events.Invalid), and so is a directory Dir that Store would refuse
// (ownDir): whoever controls the directory can move a file of this user's
// into it, and every event up to the head it holds goes unchecked.
func (v Verified) Read(id string) ([]byte, error) {
	if err := headID(id); err != nil {
		return nil, err
	}
	if _, err := os.Lstat(v.Dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err := ownDir(v.Dir); err != nil {
		return nil, err
	}
	return readAll(openOwn(v.Path(id), os.O_RDONLY))
}

// Store replaces ledger id's record with b: a file of its own (0600,
// CreateTemp's mode), synced, renamed into place (replaceFile).
func (v Verified) Store(id string, b []byte) error {
	if err := headID(id); err != nil {
		return err
	}
	if err := os.Mkdir(v.Dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return refuse(v.Dir, "cannot be created: "+errText(err))
	}
	if err := ownDir(v.Dir); err != nil {
		return err
	}
	return replaceFile(v.Path(id), b)
}

// Forget removes ledger id's record: the next verify checks the whole log.
func (v Verified) Forget(id string) error {
	if err := headID(id); err != nil {
		return err
	}
	err := os.Remove(v.Path(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
