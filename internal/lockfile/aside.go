package lockfile

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// asideLayout is the UTC time in the name an unreadable file is kept under.
const asideLayout = "20060102T150405Z"

// Aside is where KeepAside kept a file.
type Aside struct {
	Path    string
	Created bool // false: a link left by an earlier run was reused
	// ModeErr says why the kept file could not be made private (another
	// user's file keeps its own mode, inside the locks directory).
	ModeErr error
}

// KeepAside keeps the file f found at lock's path under a new name beside
// it, NAME.lock.corrupt-TIME (then -2, -3, ... if taken), mode 0600: a
// hard link, so nothing is copied and no existing file is ever replaced
// (link(2) fails on an existing name). A link to the same file left by an
// earlier run is reused. ErrChangedMeanwhile if lock's file is no longer f.
func (d *Dir) KeepAside(lock string, f State, now time.Time) (a Aside, err error) {
	err = d.inLocks(true, func(l at) (err error) {
		if a, err = l.keepAside(fileName(lock), f, now); err == nil && a.Created {
			a.ModeErr = l.chmodPrivate(filepath.Base(a.Path))
		}
		return err
	})
	return a, err
}

// KeepAsideFile keeps the file at p (a --file target, in another tool's
// directory) as KeepAside does, as p.corrupt-TIME beside it, under its own
// mode: it stays that tool's file. ErrChangedMeanwhile if p no longer
// holds data.
func KeepAsideFile(p string, data []byte, now time.Time) (a Aside, err error) {
	err = inParent(p, ErrChangedMeanwhile, func(d at, name string) error {
		f, err := d.read(name)
		if err == nil && (!f.Exists || !bytes.Equal(f.Data, data)) {
			err = ErrChangedMeanwhile
		}
		if err == nil {
			a, err = d.keepAside(name, f, now)
		}
		return err
	})
	return a, err
}

// DropAsideFile removes a link KeepAsideFile made at aside for the file at p.
func DropAsideFile(p, aside string) error {
	return inParent(p, nil, func(d at, name string) error { return d.dropAside(name, aside) })
}

// DropAside removes a link KeepAside made at aside for lock's file.
func (d *Dir) DropAside(lock, aside string) error {
	return d.inLocks(true, func(l at) error { return l.dropAside(fileName(lock), aside) })
}

// dropAside removes aside, a link keepAside made for file in d.
func (d at) dropAside(file, aside string) error {
	if filepath.Dir(aside) != d.path || !strings.HasPrefix(filepath.Base(aside), file+".corrupt-") {
		return &UnsafePathError{Path: aside, Reason: "is not a file kept aside for " + d.join(file)}
	}
	return d.unlink(filepath.Base(aside))
}

// keepAside links file, which must still be f, to file.corrupt-TIME in d.
func (d at) keepAside(file string, f State, now time.Time) (Aside, error) {
	base := file + ".corrupt-"
	entries, err := d.list()
	if err != nil {
		return Aside{}, err
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), base) {
			continue
		}
		if prior, err := d.read(e.Name()); err == nil && prior.Exists && prior.Ino == f.Ino {
			return Aside{Path: prior.Path}, nil
		}
	}
	stamp := now.UTC().Format(asideLayout)
	name := base + stamp
	for i := 2; ; i++ {
		err = unix.Linkat(d.fd, file, d.fd, name, 0)
		if err != unix.EEXIST || i > 1000 {
			break
		}
		name = fmt.Sprintf("%s%s-%d", base, stamp, i)
	}
	if err == unix.ENOENT {
		return Aside{}, ErrChangedMeanwhile
	}
	if err != nil {
		return Aside{}, &os.LinkError{Op: "link", Old: d.join(file), New: d.join(name), Err: err}
	}
	got, err := d.read(name)
	if err == nil && (!got.Exists || got.Ino != f.Ino || !bytes.Equal(got.Data, f.Data)) {
		err = ErrChangedMeanwhile
	}
	if err != nil {
		_ = d.unlink(name)
		return Aside{}, err
	}
	return Aside{Path: d.join(name), Created: true}, nil
}

// list reads the directory's entries.
func (d at) list() ([]os.DirEntry, error) {
	fd, err := d.reopen()
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: d.path, Err: err}
	}
	f := os.NewFile(uintptr(fd), d.path)
	defer f.Close()
	return f.ReadDir(-1)
}

// chmodPrivate sets mode 0600 on the regular file name, never following a symlink.
func (d at) chmodPrivate(name string) error {
	fd, err := d.openIn(name, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return d.openErr("open", name, err)
	}
	defer unix.Close(fd)
	if err := unix.Fchmod(fd, PrivateFileMode); err != nil {
		return &os.PathError{Op: "chmod", Path: d.join(name), Err: err}
	}
	return nil
}
