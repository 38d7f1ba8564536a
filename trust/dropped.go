package trust

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/internal/lockfile"
)

// Dropped is a kept head moved aside (.NAME.dropped beside it) by a run
// that goes on from an older or other log on purpose (project
// --accept-rollback), until that run settles it. The run holds the file
// (an exclusive flock, taken before it moved) while it is aside: one that
// no process holds was left by a run killed before it settled it, and the
// next look at the heads puts it back (see Heads.Kept). Putting it back is
// the safe end: a head is this user's memory of the log, and where the
// killed run had in fact recorded its rollback, the next write is refused
// by that head and the rollback is accepted again, recorded again.
type Dropped struct {
	path, aside string
	f           *os.File
}

// droppedPath is where Drop keeps the head file at path aside.
func droppedPath(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".dropped")
}

// Drop moves the head file at path aside, held until Settle; nil when
// there is none. A head aside that another live run holds is an error:
// that run puts it back if it fails, under whatever this one recorded.
func Drop(path string) (*Dropped, error) {
	if err := restoreDropped(path); err != nil {
		return nil, dropLockError(path, err)
	}
	f, err := openRegular(path, os.O_RDONLY)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	d := &Dropped{path: path, aside: droppedPath(path), f: f}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, dropLockError(path, err)
	}
	// A link, then the unlink: never over another file, and the lock
	// taken stays on the head's inode wherever it is.
	if err := os.Link(path, d.aside); err != nil {
		f.Close()
		return nil, err
	}
	if err := os.Remove(path); err != nil {
		putBack(d.aside, path)
		f.Close()
		return nil, err
	}
	return d, nil
}

// dropLockError names the failed flock of the head at path that Drop
// takes, or of the head aside there: only EWOULDBLOCK (EAGAIN), or a wait
// for it run out (lockfile.ErrBusy), says another process holds it, a run
// going on; any other error (ENOLCK, EOPNOTSUPP or ENOSYS on a file
// system without flock) is named as what it is, since "wait for the other
// run" would send the user after a run that does not exist.
func dropLockError(path string, err error) error {
	if errors.Is(err, unix.EWOULDBLOCK) || errors.Is(err, lockfile.ErrBusy) {
		return fmt.Errorf("%s: another run is going on from another state of the ledger (it holds the head): %w", path, err)
	}
	return fmt.Errorf("%s: cannot lock the head to move it aside (flock): %w", path, err)
}

// Settle ends d: the head aside is removed once the run recorded its
// rollback, and put back otherwise (not over a head kept since, which is
// newer: heads never go back).
func (d *Dropped) Settle(recorded bool) error {
	defer d.f.Close()
	if recorded {
		return os.Remove(d.aside)
	}
	return putBack(d.aside, d.path)
}

// restoreDropped puts back the head at path that a run killed before it
// settled it left aside: one no process holds. A head it cannot put back
// now stays aside for the next look. The error is the flock's of a head
// left aside: lockfile.ErrBusy when a live run holds it.
func restoreDropped(path string) error {
	aside := droppedPath(path)
	f, err := openRegular(aside, os.O_RDONLY)
	if err != nil {
		return nil
	}
	defer f.Close()
	// Waited for a moment: another look that is putting it back holds it
	// as briefly, and a look that gave up on that one at once would find
	// the head neither aside nor back.
	unlock, err := lockfile.Flock(context.Background(), int(f.Fd()), restoreWait, time.Millisecond)
	if err != nil {
		return err // its run is going on, or no lock tells: left aside
	}
	defer unlock()
	_ = putBack(aside, path)
	return nil
}

// restoreWait is how long a look at a head aside waits for another look
// putting it back (a link and an unlink), and so what a look costs while
// an accept run holds the head aside.
const restoreWait = 200 * time.Millisecond

// putBack puts the head aside back at path, or drops it where a head was
// kept at path since.
func putBack(aside, path string) error {
	if err := os.Link(aside, path); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return os.Remove(aside)
}
