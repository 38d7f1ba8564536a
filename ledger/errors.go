package ledger

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lockledger/lockledger/events"
)

// Sentinel errors. Every error the ledger returns for a lock decision wraps
// exactly one of them; use errors.Is to branch and errors.As to read the
// typed error that carries the holder.
var (
	// ErrHeld: the lock has an active holder (exit 3).
	ErrHeld = errors.New("lock is held")
	// ErrStale: the lock's holder stopped heartbeating; --force takes it over (exit 4).
	ErrStale = errors.New("lock is stale")
	// ErrNotHolder: the caller does not hold the lock it tried to release or renew (exit 5).
	ErrNotHolder = errors.New("not the lock holder")
	// ErrLost: the caller held the lock and no longer does (exit 5).
	ErrLost = errors.New("lock lost")
	// ErrNoLedger: a read-only command found no ledger at the root.
	ErrNoLedger = errors.New("no ledger")
	// ErrNotALedger: ROOT/ledger.db is not lockledger's: not an SQLite
	// database, or one whose tables are another application's. Nothing is
	// added to it (exit 1).
	ErrNotALedger = errors.New("not a lockledger ledger")
	// ErrLedgerGone: the root shows that it held a ledger (writer.flock
	// names one, a WAL holds commits, the locks directory has files the
	// ledger wrote) but ledger.db is missing, empty or another ledger's.
	// A new ledger there would restart fencing tokens at 1, so none is
	// created (exit 1).
	ErrLedgerGone = errors.New("this root held a ledger")
	// ErrUnsafePath: a lock path is a symlink, a directory or otherwise not a regular file.
	ErrUnsafePath = errors.New("unsafe lock path")
	// ErrOldSchema: a read-only open found a database that needs migrating
	// first (a writable open migrates it).
	ErrOldSchema = errors.New("ledger schema needs upgrading")
	// ErrReadOnly: a write was attempted on a ledger opened with ReadOnly.
	ErrReadOnly = errors.New("ledger opened read-only")
	// ErrClosed: the ledger was used after Close.
	ErrClosed = errors.New("ledger is closed")
)

// ErrInvalid is events.ErrInvalid: bad input, nothing written (exit 2).
var ErrInvalid = events.ErrInvalid

// HeldError reports an active holder. It wraps ErrHeld.
type HeldError struct {
	Lock    string
	Holder  events.Record
	Foreign bool // the holder is a lock file the ledger did not write
	Corrupt bool // the foreign file could not be parsed; treated as held to fail safe
	Waited  time.Duration
	// JobPIDs are the processes of the holder's job still running here
	// after the holder's own process is gone (see JobProbe).
	JobPIDs []int
}

func (e *HeldError) Error() string {
	switch {
	case e.Corrupt:
		return fmt.Sprintf("lock %s: held by an unreadable lock file the ledger did not write (treated as held; inspect it, or take it over with `steal --active`)", e.Lock)
	case e.Foreign:
		return fmt.Sprintf("lock %s: held by request %s (actor %s, pid %d on %s, a lock file the ledger did not write)",
			e.Lock, e.Holder.RequestID, e.Holder.Actor, e.Holder.PID, e.Holder.HostID)
	}
	return fmt.Sprintf("lock %s: held by request %s (actor %s, pid %d on %s, since %s)%s",
		e.Lock, e.Holder.RequestID, e.Holder.Actor, e.Holder.PID, e.Holder.HostID, e.Holder.CreatedAt, jobNote(e.Holder.PID, e.JobPIDs))
}

func jobNote(pid int, job []int) string {
	if len(job) == 0 {
		return ""
	}
	return fmt.Sprintf("; pid %d is gone but processes it started still run (pids %s): the lock is not dead until they exit",
		pid, strings.Trim(fmt.Sprint(job), "[]"))
}

func (e *HeldError) Unwrap() error { return ErrHeld }

// StaleError reports a lock whose holder's heartbeat is older than its TTL. It wraps ErrStale.
type StaleError struct {
	Lock       string
	Holder     events.Record
	Foreign    bool
	StaleSince time.Time
	Age        time.Duration // since the last heartbeat
	JobPIDs    []int         // as in HeldError
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("lock %s: stale (request %s, last heartbeat %s ago, ttl %ds)%s; use --force to take it over",
		e.Lock, e.Holder.RequestID, e.Age.Truncate(time.Second), e.Holder.TTLSeconds, jobNote(e.Holder.PID, e.JobPIDs))
}

func (e *StaleError) Unwrap() error { return ErrStale }

// NotHolderError reports a release or heartbeat by someone who does not hold
// the lock. It wraps ErrNotHolder, or ErrLost when the caller once held it.
type NotHolderError struct {
	Lock      string
	RequestID string
	Holder    *events.Record // nil when the lock is free
	Lost      bool
}

func (e *NotHolderError) Error() string {
	var who string
	if e.Holder == nil {
		who = "the lock is free"
	} else {
		who = fmt.Sprintf("it is held by request %s (actor %s, pid %d on %s)", e.Holder.RequestID, e.Holder.Actor, e.Holder.PID, e.Holder.HostID)
	}
	if e.Lost {
		return fmt.Sprintf("lock %s: request %s lost the lock: %s", e.Lock, e.RequestID, who)
	}
	return fmt.Sprintf("lock %s: request %s is not the holder: %s", e.Lock, e.RequestID, who)
}

func (e *NotHolderError) Unwrap() error {
	if e.Lost {
		return ErrLost
	}
	return ErrNotHolder
}

// UnsafePathError reports a lock path the ledger refuses to touch.
type UnsafePathError struct {
	Path   string
	Reason string
}

func (e *UnsafePathError) Error() string {
	return fmt.Sprintf("%s: %s (refusing to touch it)", e.Path, e.Reason)
}
func (e *UnsafePathError) Unwrap() error { return ErrUnsafePath }
