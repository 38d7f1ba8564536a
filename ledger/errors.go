package ledger

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/lockfile"
	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/store"
	"github.com/lockledger/lockledger/verify"
)

// Sentinel errors. Every error the ledger returns for a lock decision wraps
// exactly one of them; use errors.Is to branch and errors.As to read the
// typed error that carries the holder.
var (
	// ErrHeld: the lock has an active holder.
	ErrHeld = errors.New("lock is held")
	// ErrStale: the lock's holder stopped heartbeating; --force takes it over.
	ErrStale = errors.New("lock is stale")
	// ErrNotHolder: the caller does not hold the lock it tried to release or renew.
	ErrNotHolder = errors.New("not the lock holder")
	// ErrLost: the caller held the lock and no longer does.
	ErrLost = errors.New("lock lost")
	// ErrNoLedger: a read-only command found no ledger at the root.
	ErrNoLedger = store.ErrNoLedger
	// ErrNotALedger: ROOT/ledger.db is not lockledger's: not an SQLite
	// database, one whose tables are another application's, or one whose
	// text is not UTF-8. Nothing is added to it.
	ErrNotALedger = store.ErrNotALedger
	// ErrLedgerGone: the root shows that it held a ledger (writer.flock
	// names one, a WAL holds commits, the locks directory has files the
	// ledger wrote) but ledger.db is missing, empty or another ledger's.
	// A new ledger there would restart fencing tokens at 1, so none is
	// created.
	ErrLedgerGone = store.ErrLedgerGone
	// ErrUnsafePath: a lock path is a symlink, a directory or otherwise not a regular file.
	ErrUnsafePath = lockfile.ErrUnsafePath
	// ErrOldSchema: a read-only open found a database that needs migrating
	// first (a writable open migrates it).
	ErrOldSchema = store.ErrOldSchema
	// ErrMayNotAppend: a writer's role in the PostgreSQL database may not
	// append events (an auditor's); its open made nothing, here or there.
	ErrMayNotAppend = store.ErrMayNotAppend
	// ErrReadOnly: a write was attempted on a ledger opened with ReadOnly.
	ErrReadOnly = errors.New("ledger opened read-only")
	// ErrTruncated: the log's tail is gone (the locks table records events
	// past its end); writers append nothing until project accepts it.
	ErrTruncated = store.ErrTruncated
	// ErrUnhashed: events follow the last one with stored Merkle hashes,
	// appended by something other than lockledger; writers append nothing
	// until project --accept-broken-chain accepts them (recorded).
	ErrUnhashed = store.ErrUnhashed
	// ErrCommitUnknown: the database's answer to a write's commit was
	// lost (the connection ended once the commit was sent) and what it
	// did could not be read back: the write may be recorded or not.
	ErrCommitUnknown = errors.New("the commit's outcome is unknown")
	// ErrClosed: the ledger was used after Close.
	ErrClosed = errors.New("ledger is closed")
	// ErrBrokenChain: project refused to rebuild the projections from an
	// event log that verify finds damaged.
	ErrBrokenChain = errors.New("the event log is damaged")
)

// ErrInvalid is events.ErrInvalid: bad input, nothing written.
var ErrInvalid = events.ErrInvalid

// BrokenChainError is Project's refusal of a damaged event log: rebuilt
// from it, the locks table and the lock files would agree with a forged
// log and hide the forgery. It wraps ErrBrokenChain.
type BrokenChainError struct {
	// FirstBad is the first damage, as verify names it (lowest seq).
	FirstBad verify.Problem
	// Problems counts the damage verify found in the log.
	Problems int
	// Recorded is the seq of the ledger_projected event that records the
	// refusal (0 if it could not be recorded).
	Recorded int64
}

func (e *BrokenChainError) Error() string {
	recorded := ""
	if e.Recorded > 0 {
		recorded = termtext.Sprintf(" (the refusal is recorded: ledger_projected, seq %d)", e.Recorded)
	}
	return termtext.Sprintf("%s: first bad seq %d, %s (%s; %d %s in all); project refuses to rebuild the locks table and the "+
		"lock files from a damaged log, and changed neither%s: `lockledger verify` shows the damage, "+
		"`lockledger project --accept-broken-chain` projects it anyway and records what it changes", ErrBrokenChain, e.FirstBad.Seq, e.FirstBad.Kind,
		e.FirstBad.Detail, e.Problems, termtext.Plural(e.Problems, "problem", "problems"), recorded)
}

func (e *BrokenChainError) Unwrap() error { return ErrBrokenChain }

// UnreadableFile is a lock file that does not parse as a lock of its
// format: no holder can be read from it, so it is held to fail safe, and it
// is shown and recorded as what it is (where, how big, when it last
// changed), never as a holder. `lockledger project` moves one aside.
type UnreadableFile = events.UnreadableFile

// HeldError reports an active holder. It wraps ErrHeld.
type HeldError struct {
	Lock    string
	Holder  events.Record
	Foreign bool // the holder is a lock file the ledger did not write
	// Corrupt is set when that file could not be parsed: Holder is then a
	// placeholder, and the lock is held to fail safe.
	Corrupt *UnreadableFile
	Waited  time.Duration
	// JobPIDs are the processes of the holder's job still running here
	// after the holder's own process is gone (see proc.JobProbe).
	JobPIDs []int
	// SameRequest: the holder is another process using the caller's own
	// request id; --reclaim takes it over.
	SameRequest bool
	// Holders counts a shared lock's holders when they are what blocks:
	// a full semaphore (Limit slots) or, with SharedHeld, shared holders
	// blocking an exclusive acquirer. Holder is then the stalest of them.
	Holders    int
	Limit      int64
	SharedHeld bool
	// Queue, when set, is what holds a free lock (or one whose holder is
	// dead): the waiters queued before the caller, next first. Holder is
	// then empty.
	Queue []Waiter
}

func (e *HeldError) Error() string {
	switch {
	case len(e.Queue) > 0:
		return queueMessage(e)
	case e.SharedHeld:
		return termtext.Sprintf("lock %s: held shared by %d holder(s), e.g. request %s (actor %s, pid %d on %s, since %s)",
			e.Lock, e.Holders, e.Holder.RequestID, e.Holder.Actor, e.Holder.PID, e.Holder.HostID, e.Holder.CreatedAt)
	case e.Limit > 0 && e.Holders > 0:
		return termtext.Sprintf("lock %s: all %d slots held, e.g. by request %s (actor %s, pid %d on %s, since %s)",
			e.Lock, e.Limit, e.Holder.RequestID, e.Holder.Actor, e.Holder.PID, e.Holder.HostID, e.Holder.CreatedAt)
	case e.Corrupt != nil:
		return termtext.Sprintf("lock %s: held by an %s, not written by the ledger (treated as held, to fail safe); "+
			"`lockledger project` moves it aside (kept and recorded), or `lockledger steal %s --active` takes the lock over", e.Lock, e.Corrupt, e.Lock)
	case e.SameRequest:
		return termtext.Sprintf("lock %s: held under this request id %s by another process (actor %s, pid %d on %s, since %s)%s; a request id names one holder: use a new request id, or --reclaim to take it over from that process (recorded)",
			e.Lock, e.Holder.RequestID, e.Holder.Actor, e.Holder.PID, e.Holder.HostID, e.Holder.CreatedAt, jobNote(e.Holder.PID, e.JobPIDs))
	case e.Foreign:
		return termtext.Sprintf("lock %s: held by request %s (actor %s, pid %d on %s, a lock file the ledger did not write)",
			e.Lock, e.Holder.RequestID, e.Holder.Actor, e.Holder.PID, e.Holder.HostID)
	}
	return termtext.Sprintf("lock %s: held by request %s (actor %s, pid %d on %s, since %s)%s",
		e.Lock, e.Holder.RequestID, e.Holder.Actor, e.Holder.PID, e.Holder.HostID, e.Holder.CreatedAt, jobNote(e.Holder.PID, e.JobPIDs))
}

func jobNote(pid int, job []int) string {
	if len(job) == 0 {
		return ""
	}
	return termtext.Sprintf("; pid %d is gone but processes it started still run (pids %s): the lock is not dead until they exit",
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
	Limit      int64         // a full semaphore's slots (Holder is its stalest holder)
}

func (e *StaleError) Error() string {
	beat := e.Age.Truncate(time.Second).String() + " ago"
	if e.Age < -time.Second {
		beat = (-e.Age).Truncate(time.Second).String() + " in the future: clock skew"
	}
	return termtext.Sprintf("lock %s: stale (request %s, last heartbeat %s, ttl %ds)%s; use --force to take it over",
		e.Lock, e.Holder.RequestID, beat, e.Holder.TTLSeconds, jobNote(e.Holder.PID, e.JobPIDs))
}

func (e *StaleError) Unwrap() error { return ErrStale }

// NotHolderError reports a release or heartbeat by someone who does not hold
// the lock. It wraps ErrLost when the caller held it and had it taken away,
// else ErrNotHolder: it never held it, or released it itself (ReleasedSeq).
type NotHolderError struct {
	Lock      string
	RequestID string
	Holder    *events.Record // nil when the lock is free
	// Corrupt: the holder is an unreadable lock file (Holder is a placeholder).
	Corrupt *UnreadableFile
	Lost    bool
	// ReleasedSeq is the seq of the request's own release of the lock, when
	// that was the last thing it did as holder; 0 when it never held it.
	ReleasedSeq int64
	// Denied: the request holds the lock, but the caller is not its holder
	// and gave no Force: why (the rule). Holder is then the request's holding.
	Denied string
	// EndedBy: who ended the holding and why, when known (CheckHolding).
	EndedBy *replay.HoldingEnd
}

func (e *NotHolderError) Error() string {
	var who string
	switch {
	case e.Corrupt != nil:
		who = "it is held by an " + e.Corrupt.String()
	case e.Holder == nil:
		who = "the lock is free"
	default:
		who = termtext.Sprintf("it is held by request %s (actor %s, pid %d on %s)", e.Holder.RequestID, e.Holder.Actor, e.Holder.PID, e.Holder.HostID)
	}
	if e.EndedBy != nil {
		who += "; " + e.EndedBy.String()
	}
	switch {
	case e.Denied != "":
		return termtext.Sprintf("lock %s: request %s holds it (actor %s, pid %d on %s), but %s; "+
			"release --force --reason TEXT releases it anyway (recorded as forced, by you)",
			e.Lock, e.RequestID, e.Holder.Actor, e.Holder.PID, e.Holder.HostID, e.Denied)
	case e.Lost:
		return termtext.Sprintf("lock %s: request %s lost the lock: %s", e.Lock, e.RequestID, who)
	case e.ReleasedSeq > 0:
		return termtext.Sprintf("request %s does not hold lock %s (released it at seq %d): %s", e.RequestID, e.Lock, e.ReleasedSeq, who)
	}
	return termtext.Sprintf("request %s does not hold lock %s (never held it): %s", e.RequestID, e.Lock, who)
}

func (e *NotHolderError) Unwrap() error {
	if e.Lost {
		return ErrLost
	}
	return ErrNotHolder
}

// UnsafePathError reports a lock path the ledger refuses to touch.
type UnsafePathError = lockfile.UnsafePathError
