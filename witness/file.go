package witness

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/internal/lockfile"
	"github.com/lockledger/lockledger/trust"
)

// FileName is the name of the file a witness directory gets for a
// checkpoint of ledger id: sorted by size, then time.
func FileName(id string, size int64, t time.Time) string {
	return fmt.Sprintf("%s-%012d-%s.checkpoint", id, size, strings.ReplaceAll(t.UTC().Format("20060102T150405.000000000Z"), ".", ""))
}

// write copies note to the witness at path and returns the file written.
func write(path, id string, size int64, at time.Time, note string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if err == nil && fi.IsDir() {
		p := filepath.Join(path, FileName(id, size, at))
		return p, appendNote(p, os.O_EXCL, note, path)
	}
	if err == nil && !fi.Mode().IsRegular() {
		return "", trust.KindError(fi)
	}
	return path, appendNote(path, os.O_APPEND, note, "")
}

// appendNote writes note to a witness file, and fsyncs dir when not empty;
// O_NONBLOCK keeps a path swapped for a FIFO since the Stat from blocking
// the open, and the opened file is checked again before anything is
// written. Appenders take turns (an exclusive flock of the file, waited
// for at most appendWait): a note a full disk cut short is cut back whole
// (lockfile.AppendWhole), which must not cut another's after it, and a new
// file (a directory's) that could not take it whole is removed.
func appendNote(path string, flag int, note, dir string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|syscall.O_NONBLOCK|flag, 0o644)
	if err != nil {
		return err
	}
	if _, err := trust.Regular(f); err != nil {
		f.Close()
		return err
	}
	// Closing f lets the lock go.
	_, err = lockfile.Flock(context.Background(), int(f.Fd()), appendWait, 10*time.Millisecond)
	switch {
	case errors.Is(err, syscall.ENOLCK) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, lockfile.ErrBusy):
		// No lock to be had: a file system without locks (an NFS mount
		// without its lock daemon), or a lock held past appendWait, which
		// anyone who can open the file may do (a reader of another uid),
		// and the note must not be lost to them. The note is appended as it
		// comes, and a torn one is not cut back, since that could cut
		// another process's after it.
		_, err = f.WriteString(separator(path, f) + note)
	case err != nil:
		f.Close()
		return err
	default:
		var fi os.FileInfo
		if fi, err = f.Stat(); err == nil {
			err = lockfile.AppendWhole(f, fi.Size(), separator(path, f)+note)
		}
	}
	if err != nil {
		f.Close()
		if flag&os.O_EXCL != 0 {
			_ = os.Remove(path)
		}
		return err
	}
	if err := lockfile.SyncClose(f); err != nil {
		return err
	}
	if dir != "" {
		return lockfile.SyncDir(dir)
	}
	return nil
}

// separator is what goes before a note appended to f, the witness file
// at path, so that a note left cut short at its end (a full disk where it
// could not be cut back: no lock, or an older lockledger) does not take
// the new note with it (checkpoint.Separator). f is opened for writing
// only, so the end is read through a second open of path, of the same
// file; where it cannot be read, nothing goes before the note.
func separator(path string, f *os.File) string {
	r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return ""
	}
	defer r.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	if rfi, err := r.Stat(); err != nil || !os.SameFile(fi, rfi) {
		return ""
	}
	tail := make([]byte, min(fi.Size(), tailRead))
	if _, err := r.ReadAt(tail, fi.Size()-int64(len(tail))); err != nil {
		return ""
	}
	return checkpoint.Separator(tail)
}

// tailRead is how much of a witness file's end separator reads: more
// than a signature line.
const tailRead = 4096

// appendWait is how long a note waits for another process's append to the
// same witness file: one note and its fsync, which on a file another host
// shares (NFS) can take seconds, and which must not be run into, since
// appends from two hosts are not atomic there. Past it the note goes in
// all the same, only without the cut-back.
const appendWait = 5 * time.Second
