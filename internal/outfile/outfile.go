// Package outfile writes a command's output file (-o FILE) so that
// writing it never destroys anything else. The bytes go to a new file
// created beside the target, which replaces the target by rename only once
// it is complete and on disk. A target that is a symlink or anything but a
// regular file is refused, and so is one inside a guarded directory (see
// OutsideOf), before anything is written.
package outfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Mode is the mode a new output file is created with (less the umask).
const Mode = 0o600

// ErrRefused is wrapped by every *RefusedError.
var ErrRefused = errors.New("output path refused")

// RefusedError says why Create or Commit will not write at Path. Inside is
// the guarded directory (as given to OutsideOf) that Path lies in or holds
// a file of; empty for the other rules.
type RefusedError struct {
	Path   string
	Rule   string
	Inside string
}

func (e *RefusedError) Error() string { return e.Path + ": " + e.Rule }
func (e *RefusedError) Unwrap() error { return ErrRefused }

// InsideRule is the Rule of a path refused for being inside dir.
func InsideRule(dir string) string { return "is inside " + dir }

// Option adds a rule to Create.
type Option func(*options)

type options struct {
	guarded   []string
	noReplace bool
	mode      uint32
}

// OutsideOf refuses a path inside one of dirs, under any name: the
// target's directory, or any directory above it, is one of dirs by device
// and inode (a symlink or a bind mount hides nothing). It also refuses an
// existing target that is another name (a hard link) of a file below one
// of dirs. A dir that does not exist guards nothing.
func OutsideOf(dirs ...string) Option {
	return func(o *options) { o.guarded = append(o.guarded, dirs...) }
}

// NoReplace makes Commit fail with an error matching fs.ErrExist, and
// leave the file there alone, when the target exists.
func NoReplace() Option {
	return func(o *options) { o.noReplace = true }
}

// WithMode creates the file with mode perm (less the umask) instead of
// Mode: for a file another user's process must read.
func WithMode(perm os.FileMode) Option {
	return func(o *options) { o.mode = uint32(perm.Perm()) }
}

// File is an output file being written. Bytes written are in a new file
// beside the target until Commit puts it in the target's place; Abort
// removes it. One of the two must be called.
type File struct {
	path string
	base string
	dir  int // the target's directory, opened once
	tmp  string
	f    *os.File
	opts options
	done bool
}

// Create starts the output file at path. It refuses (a *RefusedError) a
// path that does not name a file, a target that is a symlink or not a
// regular file, and one the options rule out; nothing is written then.
func Create(path string, opts ...Option) (*File, error) {
	out := &File{path: path, dir: -1, opts: options{mode: Mode}}
	for _, o := range opts {
		o(&out.opts)
	}
	out.base = filepath.Base(path)
	if path == "" || strings.HasSuffix(path, string(filepath.Separator)) || out.base == "." || out.base == ".." {
		return nil, &RefusedError{Path: path, Rule: "does not name a file"}
	}
	dir := filepath.Dir(path)
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	out.dir = fd
	if err := out.check(); err != nil {
		out.Abort()
		return nil, err
	}
	if out.f, out.tmp, err = CreateTemp(fd, path, out.opts.mode); err != nil {
		out.Abort()
		return nil, err
	}
	return out, nil
}

// Name is the target's path, as given to Create.
func (f *File) Name() string { return f.path }

// Write writes to the new file.
func (f *File) Write(p []byte) (int, error) {
	if f.f == nil {
		return 0, fs.ErrClosed
	}
	return f.f.Write(p)
}

// Commit flushes the new file to disk, checks the target again, puts the
// file in its place (rename; a link with NoReplace) and flushes the
// directory. On any error the new file is removed and the target is as it
// was.
func (f *File) Commit() error {
	if f.done {
		return fs.ErrClosed
	}
	err := f.f.Sync()
	if err == nil {
		err = f.f.Close()
		f.f = nil
	}
	if err == nil {
		err = f.check()
	}
	if err == nil {
		err = f.place()
	}
	if err != nil {
		f.Abort()
		return err
	}
	f.done = true
	if err := unix.Fsync(f.dir); err != nil {
		unix.Close(f.dir)
		return &fs.PathError{Op: "fsync", Path: filepath.Dir(f.path), Err: err}
	}
	return unix.Close(f.dir)
}

// Abort removes the new file and leaves the target as it was. It does
// nothing after Commit or Abort.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	if f.f != nil {
		f.f.Close()
	}
	if f.tmp != "" {
		_ = unix.Unlinkat(f.dir, f.tmp, 0)
	}
	if f.dir >= 0 {
		unix.Close(f.dir)
	}
}

func (f *File) place() error {
	if !f.opts.noReplace {
		if err := unix.Renameat(f.dir, f.tmp, f.dir, f.base); err != nil {
			return &fs.PathError{Op: "rename", Path: f.path, Err: err}
		}
		f.tmp = ""
		return nil
	}
	if err := unix.Linkat(f.dir, f.tmp, f.dir, f.base, 0); err != nil {
		return &fs.PathError{Op: "link", Path: f.path, Err: err}
	}
	if err := unix.Unlinkat(f.dir, f.tmp, 0); err != nil {
		return &fs.PathError{Op: "unlink", Path: filepath.Join(filepath.Dir(f.path), f.tmp), Err: err}
	}
	f.tmp = ""
	return nil
}

// CreateTemp creates a new file with mode perm (less the umask) in the
// directory dir (a descriptor) beside path, the target: a name of its own,
// O_EXCL, never through a symlink. It returns the file and its name in dir.
func CreateTemp(dir int, path string, perm uint32) (*os.File, string, error) {
	prefix := "." + filepath.Base(path)
	if len(prefix) > 100 {
		prefix = prefix[:100]
	}
	for range 100 {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, "", err
		}
		name := prefix + "." + hex.EncodeToString(b[:]) + ".tmp"
		fd, err := unix.Openat(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		full := filepath.Join(filepath.Dir(path), name)
		if err != nil {
			return nil, "", &fs.PathError{Op: "create", Path: full, Err: err}
		}
		return os.NewFile(uintptr(fd), full), name, nil
	}
	return nil, "", fmt.Errorf("outfile: no free name for a new file beside %s", path)
}

// check applies the rules to the target's directory and to what is at the
// target now.
func (f *File) check() error {
	guards := f.guards()
	if err := f.checkDir(guards); err != nil {
		return err
	}
	return f.checkTarget(guards)
}

// fileID is a file's device and inode: the identity that a second name (a
// symlink, a bind mount, a hard link) cannot hide.
type fileID struct{ dev, ino uint64 }

func idOf(st *unix.Stat_t) fileID { return fileID{dev: uint64(st.Dev), ino: st.Ino} }

// dirID is the fileID of the directory at path (symlinks followed); ok is
// false when there is none.
func dirID(path string) (id fileID, ok bool) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fileID{}, false
	}
	return idOf(&st), true
}

type guard struct {
	dir string
	id  fileID
}

// guards are the guarded directories that exist.
func (f *File) guards() []guard {
	var gs []guard
	for _, d := range f.opts.guarded {
		if id, ok := dirID(d); ok {
			gs = append(gs, guard{dir: d, id: id})
		}
	}
	return gs
}

// checkDir refuses a target whose directory, or a directory above it
// (found through "..", whatever names led there), is a guarded one.
func (f *File) checkDir(guards []guard) error {
	if len(guards) == 0 {
		return nil
	}
	cur, err := unix.Dup(f.dir)
	if err != nil {
		return err
	}
	defer func() { unix.Close(cur) }()
	for range 4096 {
		var st unix.Stat_t
		if err := unix.Fstat(cur, &st); err != nil {
			return &fs.PathError{Op: "stat", Path: filepath.Dir(f.path), Err: err}
		}
		id := idOf(&st)
		for _, g := range guards {
			if id == g.id {
				return &RefusedError{Path: f.path, Inside: g.dir, Rule: InsideRule(g.dir)}
			}
		}
		up, err := unix.Openat(cur, "..", openUp|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return &fs.PathError{Op: "open", Path: filepath.Dir(f.path) + " (a directory above)", Err: err}
		}
		var ust unix.Stat_t
		err = unix.Fstat(up, &ust)
		unix.Close(cur)
		cur = up
		if err != nil {
			return &fs.PathError{Op: "stat", Path: filepath.Dir(f.path) + " (a directory above)", Err: err}
		}
		if idOf(&ust) == id {
			return nil
		}
	}
	return fmt.Errorf("outfile: %s: too many directories above", f.path)
}

// checkTarget refuses a target that is a symlink, not a regular file, a
// hard link of a guarded file, or (NoReplace) any existing file.
func (f *File) checkTarget(guards []guard) error {
	var st unix.Stat_t
	err := unix.Fstatat(f.dir, f.base, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return &fs.PathError{Op: "stat", Path: f.path, Err: err}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		rule := "is a symlink"
		buf := make([]byte, 4096)
		if n, err := unix.Readlinkat(f.dir, f.base, buf); err == nil {
			rule += " (to " + string(buf[:n]) + ")"
		}
		return &RefusedError{Path: f.path, Rule: rule + ": an output file is never written through a symlink"}
	}
	if k := NotRegular(uint32(st.Mode)); k != "" {
		return &RefusedError{Path: f.path, Rule: "is " + k + ": an output file replaces only a regular file"}
	}
	if f.opts.noReplace {
		return &fs.PathError{Op: "create", Path: f.path, Err: unix.EEXIST}
	}
	if st.Nlink > 1 {
		return sameFile(f.path, idOf(&st), guards)
	}
	return nil
}

// sameFile refuses path, a file of identity id, when a file below a
// guarded directory is the same file.
func sameFile(path string, id fileID, guards []guard) error {
	for _, g := range guards {
		var found string
		_ = filepath.WalkDir(g.dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			var st unix.Stat_t
			if unix.Lstat(p, &st) == nil && idOf(&st) == id {
				found = p
				return filepath.SkipAll
			}
			return nil
		})
		if found != "" {
			return &RefusedError{Path: path, Inside: g.dir, Rule: "is another name (a hard link) of " + found}
		}
	}
	return nil
}
