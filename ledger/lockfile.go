package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/schema"
)

// maxLockFile bounds how much of a lock file is read; anything larger is
// not a lock record and counts as corrupt.
const maxLockFile = 64 << 10

// lockFiles places, replaces and removes ROOT/locks/NAME.lock.
//
// Every change goes through a journal file, .NAME.lock.pending, written
// and hard-linked into place: link(2) fails if the lock file exists, so a
// new lock never clobbers another (tower-fleet §4.2), and a replacement goes
// link-to-.swap then rename(2), so readers see the old file or the new one,
// never a mix. The journal's fsync runs at the same time as the ledger's
// commit (see writeTx.commit), and the journal is removed only after both;
// a journal found later is the trace of a process that died or lost power
// in between, and interpret undoes or finishes it: a lock file that shares
// the journal's inode is ours, and unless the committed row carries exactly
// its bytes it is dropped and, where the ledger holds the lock, rewritten
// from the row. All of this runs under the writer mutex, so one process at
// a time touches the directory.
type lockFiles struct {
	dir string
	// broken says why the directory cannot be read (a file or a symlink in
	// its place). Only a read-only open leaves it set rather than failing:
	// the event log does not depend on lock files, so every read of it
	// still works, and reads of lock files report this instead.
	broken error
}

func (f lockFiles) path(name string) string    { return filepath.Join(f.dir, name+".lock") }
func (f lockFiles) journal(name string) string { return journalOf(f.path(name)) }
func (f lockFiles) swap(name string) string    { return swapOf(f.path(name)) }

// journalOf and swapOf name the hidden helper files beside a lock path p.
func journalOf(p string) string {
	return filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".pending")
}
func swapOf(p string) string { return filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".swap") }

// fileState is what lies at a lock path.
type fileState struct {
	exists bool
	data   []byte // at most maxLockFile+1 bytes
	ino    uint64
	// path, size and mtime describe the file to a person (an unreadable
	// one is shown as what it is, see UnreadableFile).
	path  string
	size  int64
	mtime time.Time
}

// unreadable describes the file as a lock file no reader can parse.
func (f fileState) unreadable() *UnreadableFile {
	return &UnreadableFile{Path: f.path, Size: f.size, Modified: f.mtime.UTC()}
}

// read returns the lock file at p without following symlinks.
func readRegular(p string) (fileState, error) {
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return fileState{}, nil
	}
	if err != nil {
		return fileState{}, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return fileState{}, &UnsafePathError{Path: p, Reason: "is a symlink"}
	}
	if !fi.Mode().IsRegular() {
		return fileState{}, &UnsafePathError{Path: p, Reason: "is not a regular file (" + fileKind(fi.Mode()) + ")"}
	}
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if errors.Is(err, unix.ENOENT) {
		return fileState{}, nil
	}
	if err != nil {
		return fileState{}, &os.PathError{Op: "open", Path: p, Err: err}
	}
	file := os.NewFile(uintptr(fd), p)
	defer file.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fileState{}, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fileState{}, &UnsafePathError{Path: p, Reason: "is not a regular file"}
	}
	data, err := io.ReadAll(io.LimitReader(file, maxLockFile+1))
	if err != nil {
		return fileState{}, err
	}
	return fileState{exists: true, data: data, ino: st.Ino, path: p, size: st.Size,
		mtime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec)}, nil
}

// fileKind names what a non-regular file is, in words.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "mode " + m.Type().String()
}

func (f lockFiles) read(name string) (fileState, error) {
	if f.broken != nil {
		return fileState{}, f.broken
	}
	return readRegular(f.path(name))
}

// writeJournal writes data to a new journal file and returns it open, for
// the caller to fsync and close.
func writeJournal(lockPath string, data []byte) (*os.File, error) {
	p := journalOf(lockPath)
	if err := removeIfExists(p); err != nil {
		return nil, err
	}
	mode := fileModeIn(filepath.Dir(p))
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	if err != nil {
		return nil, &os.PathError{Op: "create", Path: p, Err: err}
	}
	if err := fixFileMode(fd, mode); err != nil {
		unix.Close(fd)
		_ = os.Remove(p)
		return nil, &os.PathError{Op: "chmod", Path: p, Err: err}
	}
	file := os.NewFile(uintptr(fd), p)
	if _, err := file.Write(data); err != nil {
		file.Close()
		return nil, err
	}
	return file, nil
}

// errFileExists: placing a new lock file found one already there.
var errFileExists = errors.New("lock file exists")

// place puts a new lock file in place without clobbering an existing one.
// It returns the journal, open, to be fsynced with the commit.
func (f lockFiles) place(name string, data []byte) (*os.File, error) {
	return placeAt(f.path(name), data)
}

func placeAt(p string, data []byte) (*os.File, error) {
	j, err := writeJournal(p, data)
	if err != nil {
		return nil, err
	}
	if err := os.Link(journalOf(p), p); err != nil {
		j.Close()
		_ = os.Remove(journalOf(p))
		if errors.Is(err, fs.ErrExist) {
			return nil, errFileExists
		}
		return nil, err
	}
	return j, nil
}

// replace atomically swaps the lock file's content for data. It returns
// the journal, open, to be fsynced with the commit.
func (f lockFiles) replace(name string, data []byte) (*os.File, error) {
	return replaceAt(f.path(name), data)
}

func replaceAt(p string, data []byte) (*os.File, error) {
	j, err := writeJournal(p, data)
	if err != nil {
		return nil, err
	}
	if err := removeIfExists(swapOf(p)); err == nil {
		if err = os.Link(journalOf(p), swapOf(p)); err == nil {
			err = os.Rename(swapOf(p), p)
		}
	}
	if err != nil {
		j.Close()
		return nil, err
	}
	return j, nil
}

// syncClose makes a journal durable and closes it; repairs outside a
// commit use it directly.
func syncClose(j *os.File) error {
	err := j.Sync()
	if cerr := j.Close(); err == nil {
		err = cerr
	}
	return err
}

// remove deletes the lock file if it still holds exactly data.
func (f lockFiles) remove(name string, data []byte) error { return removeAt(f.path(name), data) }

func removeAt(p string, data []byte) error {
	cur, err := readRegular(p)
	if err != nil || !cur.exists {
		return err
	}
	if !bytes.Equal(cur.data, data) {
		return nil // not ours any more: leave another tool's file alone
	}
	return removeIfExists(p)
}

// done removes the journal once the ledger transaction has committed.
func (f lockFiles) done(name string) error { return removeIfExists(f.journal(name)) }

func removeIfExists(p string) error {
	err := os.Remove(p)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// ensureDir creates dir with mode 0700 (2770 in a shared root) if it is
// missing and refuses a symlink or a non-directory in its place.
func ensureDir(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := mkdirIn(dir); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		fi, err = os.Lstat(dir)
	}
	if err != nil {
		return err
	}
	return realDir(dir, fi)
}

// entries lists the locks directory; a missing one (a read-only open does
// not create it) holds nothing.
func (f lockFiles) entries() ([]os.DirEntry, error) {
	if f.broken != nil {
		return nil, f.broken
	}
	entries, err := os.ReadDir(f.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return entries, err
}

// checkDir is ensureDir for a reader: a missing directory is fine (it
// holds no files), anything else must be a real directory.
func checkDir(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return realDir(dir, fi)
}

func realDir(dir string, fi fs.FileInfo) error {
	if fi.Mode()&fs.ModeSymlink != 0 {
		return &UnsafePathError{Path: dir, Reason: "is a symlink"}
	}
	if !fi.IsDir() {
		return &UnsafePathError{Path: dir, Reason: "is not a directory"}
	}
	return nil
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
