package lockfile

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// PinName is the file beside writer.flock in which this host keeps the
// ledger it writes to: its id and the newest head it has seen.
const PinName = "ledger.pin"

// Pin is a ledger as a host last saw it: its id and its head (seq and hash
// of the last event; 0 and "" for a ledger without events).
type Pin struct {
	LedgerID string
	Seq      int64
	Hash     string
}

func (p Pin) String() string {
	if p.Seq == 0 {
		return fmt.Sprintf("ledger %s with no events", p.LedgerID)
	}
	return fmt.Sprintf("ledger %s at seq %d (hash %s)", p.LedgerID, p.Seq, p.Hash)
}

// ReadPin reads the root's pin: ok is false where there is none (no file,
// or an empty one). A pin that does not parse is an error naming the file.
func (d *Dir) ReadPin() (p Pin, ok bool, err error) {
	var b []byte
	if err := d.inRoot(false, func(r at) (err error) { b, _, err = r.readStart(PinName, 512); return err }); err != nil {
		return Pin{}, false, err
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return Pin{}, false, nil
	}
	if len(fields) == 3 {
		p.LedgerID, p.Hash = fields[0], fields[2]
		if p.Seq, err = strconv.ParseInt(fields[1], 10, 64); err == nil && p.Seq >= 0 && (p.Hash == "-") == (p.Seq == 0) {
			if p.Hash == "-" {
				p.Hash = ""
			}
			return p, true, nil
		}
	}
	return Pin{}, false, fmt.Errorf("%s does not parse as a pin (LEDGER_ID SEQ HASH); remove it to pin the ledger found now", d.root.join(PinName))
}

// WritePin replaces the root's pin: a new file renamed into place, not
// synced (a crash may leave the pin before it, which a later write
// advances; never one the host has not seen).
func (d *Dir) WritePin(p Pin) error {
	return d.inRoot(true, func(r at) error {
		tmp := fmt.Sprintf(".%s.%016x", PinName, rand.Uint64())
		fd, err := r.create(tmp, unix.O_WRONLY|unix.O_EXCL)
		if err != nil {
			return r.openErr("create", tmp, err)
		}
		f := os.NewFile(uintptr(fd), r.join(tmp))
		_, err = fmt.Fprintf(f, "%s %d %s\n", p.LedgerID, p.Seq, cmp.Or(p.Hash, "-"))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = unix.Renameat(r.fd, tmp, r.fd, PinName)
		}
		if err != nil {
			_ = r.unlink(tmp)
			return fmt.Errorf("write %s: %w", r.join(PinName), err)
		}
		return nil
	})
}

// PinLockName is the file whose flock(2) is the lock of a read, compare
// and write of the pin (LockPin).
const PinLockName = "pin.flock"

// LockPin takes the lock of a read, compare and write of the pin: an
// exclusive flock(2) of ROOT/pin.flock (made as writer.flock is, 0600 or
// 0660 in a group root: only those who may write the root can hold it),
// waited for while ctx lasts. Of two processes that advance the pin at
// once, the one that reads the head later writes later. It is not the
// writer mutex: a writer stopped in its commit holds that one, and no
// process's exit must wait for it.
func (d *Dir) LockPin(ctx context.Context) (unlock func(), err error) {
	fd := -1
	err = d.inRoot(true, func(r at) (err error) {
		if fd, err = r.create(PinLockName, unix.O_RDWR); err != nil {
			return r.openErr("open", PinLockName, err)
		}
		if err := regular(fd, r.join(PinLockName)); err != nil {
			unix.Close(fd)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	release, err := Flock(ctx, fd, -1, time.Millisecond)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("lock %s: %w", d.root.join(PinLockName), err)
	}
	return func() { release(); unix.Close(fd) }, nil
}
