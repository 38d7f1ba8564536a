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
func (d *Dir) KeepAside(lock string, f State, now time.Time) (Aside, error) {
	done, err := d.use()
	defer done()
	if err != nil {
		return Aside{}, err
	}
	l, err := d.writable()
	if err != nil {
		return Aside{}, err
	}
	file := fileName(lock)
	base := file + ".corrupt-"
	entries, err := d.entries()
	if err != nil {
		return Aside{}, err
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), base) {
			continue
		}
		if prior, err := l.read(e.Name()); err == nil && prior.Exists && prior.Ino == f.Ino {
			return Aside{Path: prior.Path}, nil
		}
	}
	stamp := now.UTC().Format(asideLayout)
	name := base + stamp
	for i := 2; ; i++ {
		err = unix.Linkat(l.fd, file, l.fd, name, 0)
		if err != unix.EEXIST || i > 1000 {
			break
		}
		name = fmt.Sprintf("%s%s-%d", base, stamp, i)
	}
	if err == unix.ENOENT {
		return Aside{}, ErrChangedMeanwhile
	}
	if err != nil {
		return Aside{}, &os.LinkError{Op: "link", Old: l.join(file), New: l.join(name), Err: err}
	}
	got, err := l.read(name)
	if err == nil && (!got.Exists || got.Ino != f.Ino || !bytes.Equal(got.Data, f.Data)) {
		err = ErrChangedMeanwhile
	}
	if err != nil {
		_ = l.unlink(name)
		return Aside{}, err
	}
	return Aside{Path: l.join(name), Created: true, ModeErr: l.chmodPrivate(name)}, nil
}

// DropAside removes a file KeepAside kept at path.
func (d *Dir) DropAside(path string) error {
	done, err := d.use()
	defer done()
	if err != nil {
		return err
	}
	if filepath.Dir(path) != d.locks.path || !strings.Contains(filepath.Base(path), ".lock.corrupt-") {
		return &UnsafePathError{Path: path, Reason: "is not a file kept aside in " + d.locks.path}
	}
	return d.locks.unlink(filepath.Base(path))
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
