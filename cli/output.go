package cli

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/store"
)

// lockObject is the --json answer of acquire, steal, heartbeat and status.
// Status is what the command did (acquired, stolen, ...); status and list,
// which do nothing, leave it out: State is the lock's state.
type lockObject struct {
	Status       string         `json:"status,omitempty"`
	LockName     string         `json:"lock_name"`
	State        string         `json:"state"`
	RequestID    string         `json:"request_id,omitempty"`
	FencingToken int64          `json:"fencing_token,omitempty"`
	Lock         *events.Record `json:"lock"`
	Path         string         `json:"path,omitempty"`
	Foreign      bool           `json:"foreign,omitempty"`
	// Corrupt describes an unreadable lock file that holds the lock (to
	// fail safe): {"path", "size_bytes", "modified"}; lock is then null.
	Corrupt *ledger.UnreadableFile `json:"corrupt,omitempty"`
	// UnreadableFile: such a file sits at the path of a lock the ledger
	// holds (lock is the ledger's holder).
	UnreadableFile *ledger.UnreadableFile `json:"unreadable_file,omitempty"`
	HeldSeconds    *int64                 `json:"held_seconds,omitempty"`
	AgeSeconds     *int64                 `json:"heartbeat_age_seconds,omitempty"`
	StaleSince     string                 `json:"stale_since,omitempty"`
	JobPIDs        []int                  `json:"job_pids,omitempty"`
	Reason         string                 `json:"reason,omitempty"`
	PreviousLock   *events.Record         `json:"previous_lock,omitempty"`
	PreviousHash   string                 `json:"previous_lock_hash,omitempty"`
	Problem        string                 `json:"problem,omitempty"`
	// Displaced is the ledger's own holder when another tool's lock has
	// taken the lock (see status).
	Displaced *events.Record `json:"displaced,omitempty"`
	// HolderFormat is the format of that tool's file; NoTTL says the
	// format carries no TTL (lock.ttl_seconds is only a placeholder).
	HolderFormat string `json:"holder_format,omitempty"`
	NoTTL        bool   `json:"no_ttl,omitempty"`
	// Mode is "shared" for a shared holding or a lock held shared, Limit
	// its semaphore's slots; Holders every shared holder (lock is then
	// the stalest of them in the lock's state).
	Mode    string         `json:"mode,omitempty"`
	Limit   int64          `json:"limit,omitempty"`
	Holders []sharedObject `json:"holders,omitempty"`
}

// sharedObject is one shared holder in status --json.
type sharedObject struct {
	State        string        `json:"state"`
	FencingToken int64         `json:"fencing_token"`
	Lock         events.Record `json:"lock"`
	HeldSeconds  int64         `json:"held_seconds"`
	AgeSeconds   int64         `json:"heartbeat_age_seconds"`
	StaleSince   string        `json:"stale_since,omitempty"`
	JobPIDs      []int         `json:"job_pids,omitempty"`
}

func acquisitionObject(a *ledger.Acquisition) lockObject {
	status := "acquired"
	switch {
	case a.Already:
		status = "already_held"
	case a.Stolen:
		status = "stolen"
	}
	rec := a.Record
	return lockObject{Status: status, LockName: a.Lock, State: events.StateHeld, RequestID: a.RequestID,
		FencingToken: a.FencingToken, Lock: &rec, Reason: a.Reason, PreviousLock: a.Previous, PreviousHash: a.PreviousHash,
		Mode: a.Mode, Limit: a.Limit}
}

func statusObject(s *ledger.LockStatus) lockObject {
	o := lockObject{LockName: s.Name, State: s.State, FencingToken: s.FencingToken, Lock: s.Holder,
		Path: s.Path, Foreign: s.Foreign, Corrupt: s.Corrupt, UnreadableFile: s.Unreadable, JobPIDs: s.JobPIDs,
		Displaced: s.Displaced, Problem: s.Problem, HolderFormat: s.HolderFormat, NoTTL: noTTL(s)}
	if s.Corrupt != nil {
		o.Lock = nil // no holder can be read from the file
	} else if s.Holder != nil {
		o.RequestID = s.Holder.RequestID
		held, age := int64(s.HeldFor/time.Second), int64(s.SinceBeat/time.Second)
		o.HeldSeconds, o.AgeSeconds = &held, &age
		if s.State == events.StateStale {
			o.StaleSince = events.FormatLockTime(s.StaleSince)
		}
	}
	o.Mode, o.Limit = s.Mode, s.Limit
	for _, h := range s.Shared {
		so := sharedObject{State: h.State, FencingToken: h.FencingToken, Lock: h.Holder, HeldSeconds: int64(h.HeldFor / time.Second),
			AgeSeconds: int64(h.SinceBeat / time.Second), JobPIDs: h.JobPIDs}
		if h.State == events.StateStale {
			so.StaleSince = events.FormatLockTime(h.StaleSince)
		}
		o.Holders = append(o.Holders, so)
	}
	return o
}

// errorObject is the --json form of an error: tower-fleet's lock_blocked
// and lock_stale objects, and the same shape for the other failures; its
// "error" is one of ErrorKinds.
func errorObject(err error) map[string]any {
	var ie *InterruptedError
	if errors.As(err, &ie) {
		return map[string]any{"error": KindInterrupted, "signal": unix.SignalName(ie.Signal), "message": err.Error(),
			"cause": errorObject(ie.Err)}
	}
	var held *ledger.HeldError
	var stale *ledger.StaleError
	var nh *ledger.NotHolderError
	var inv *events.InvalidError
	var broken *ledger.BrokenChainError
	var none *store.NoLedgerError
	var xe *ExecError
	switch {
	case errors.As(err, &xe):
		return map[string]any{"error": xe.kind(), "command": xe.Command, "message": err.Error()}
	case errors.Is(err, ledger.ErrNoLedger):
		o := map[string]any{"error": KindNoLedger, "message": err.Error(),
			"suggestion": "name the ledger's root with --root or LOCKLEDGER_ROOT (its database with --database); lockledger init creates a ledger"}
		if errors.As(err, &none) {
			o["where"] = none.Where
		}
		return o
	case errors.As(err, &broken):
		o := map[string]any{"error": KindBrokenChain, "first_bad": broken.FirstBad, "problem_count": broken.Problems,
			"message":    err.Error(),
			"suggestion": "lockledger verify shows the damage; lockledger project --accept-broken-chain projects anyway and records what it changes"}
		if broken.Recorded > 0 {
			o["run_recorded"] = broken.Recorded
		}
		return o
	case errors.As(err, &held):
		o := map[string]any{"error": KindLockBlocked, "lock_name": held.Lock, "held_by": events.HolderOf(held.Holder),
			"message":    err.Error(),
			"suggestion": "Wait for completion (--wait D), or if it must stop now: lockledger steal " + held.Lock + " --active --reason TEXT"}
		if held.Foreign {
			o["foreign"] = true
		}
		if held.Corrupt != nil {
			o["held_by"], o["corrupt"] = nil, held.Corrupt
			o["suggestion"] = "lockledger project moves the unreadable file aside (kept beside it and recorded); or lockledger steal " +
				held.Lock + " --active --reason TEXT"
		}
		if held.Waited > 0 {
			o["waited_seconds"] = held.Waited.Seconds()
		}
		return o
	case errors.As(err, &stale):
		return map[string]any{"error": KindLockStale, "lock_name": stale.Lock,
			"stale_since": events.FormatLockTime(stale.StaleSince), "age_seconds": int64(stale.Age / time.Second),
			"ttl_seconds": stale.Holder.TTLSeconds, "held_by": events.HolderOf(stale.Holder), "message": err.Error(),
			"suggestion": "Use --force to acquire (the stale lock will be recorded as stolen)"}
	case errors.As(err, &nh):
		kind := KindNotHolder
		if nh.Lost {
			kind = KindLockLost
		}
		o := map[string]any{"error": kind, "lock_name": nh.Lock, "request_id": nh.RequestID, "held_by": nil,
			"message": err.Error()}
		if nh.Corrupt != nil {
			o["corrupt"] = nh.Corrupt
		} else if nh.Holder != nil {
			o["held_by"] = events.HolderOf(*nh.Holder)
		}
		if nh.ReleasedSeq > 0 {
			o["released_seq"] = nh.ReleasedSeq
		}
		return o
	case errors.As(err, &inv):
		return map[string]any{"error": KindInvalidInput, "field": inv.Field, "value": inv.Value, "rule": inv.Rule,
			"message": err.Error()}
	case ExitCode(err) == ExitUsage:
		return map[string]any{"error": KindInvalidInput, "message": err.Error()}
	}
	return map[string]any{"error": KindFailure, "message": err.Error()}
}
