package lockcmd

import (
	"time"

	"github.com/lockledger/lockledger/cli/invocation"
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
	// Unprobed (status of a held or stale lock) says why the holder's pid
	// cannot be probed from here; StaleAt and StaleInSeconds (a held
	// lock) when it turns stale without a heartbeat.
	Unprobed       string `json:"unprobed,omitempty"`
	StaleAt        string `json:"stale_at,omitempty"`
	StaleInSeconds *int64 `json:"stale_in_seconds,omitempty"`
	// ReleaseSecret (acquire --print-release-secret) is the holding's
	// release secret, which nothing else shows.
	ReleaseSecret string `json:"release_secret,omitempty"`
	// Queue is the lock's waiters (status and list), next first.
	Queue []invocation.Waiter `json:"queue,omitempty"`
	// BehindPin (status, and list on every lock) is the ledger read not
	// being what this root's pin allows: restored from a backup or rolled
	// back, or another ledger (the reader's error line on stderr says the
	// same).
	BehindPin *behindPinObject `json:"behind_pin,omitempty"`
}

// behindPinObject is a ledger behind the root's pin: the pin's file, what
// it pins, what the ledger holds, and why that is not the pinned ledger
// or a state after it.
type behindPinObject struct {
	Pin    string    `json:"pin"`
	Pinned pinObject `json:"pinned"`
	Found  pinObject `json:"found"`
	Reason string    `json:"reason"`
}

// pinObject is a ledger at a head: seq 0 and no hash for one with no events.
type pinObject struct {
	LedgerID string `json:"ledger_id"`
	Seq      int64  `json:"seq"`
	Hash     string `json:"hash,omitempty"`
}

// behindPin is b as status --json carries it (nil: the ledger is what
// the pin allows).
func behindPin(b *store.RolledBackError) *behindPinObject {
	if b == nil {
		return nil
	}
	return &behindPinObject{Pin: b.Pin, Reason: b.Reason,
		Pinned: pinObject{LedgerID: b.Pinned.LedgerID, Seq: b.Pinned.Seq, Hash: b.Pinned.Hash},
		Found:  pinObject{LedgerID: b.Found.LedgerID, Seq: b.Found.Seq, Hash: b.Found.Hash}}
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
	// as in lockObject
	Unprobed       string `json:"unprobed,omitempty"`
	StaleAt        string `json:"stale_at,omitempty"`
	StaleInSeconds *int64 `json:"stale_in_seconds,omitempty"`
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
		Mode: a.Mode, Limit: a.Limit, ReleaseSecret: a.ReleaseSecret}
}

func statusObject(s *ledger.LockStatus) lockObject {
	o := lockObject{LockName: s.Name, State: s.State, FencingToken: s.FencingToken, Lock: s.Holder,
		Path: s.Path, Foreign: s.Foreign, Corrupt: s.Corrupt, UnreadableFile: s.Unreadable, JobPIDs: s.JobPIDs,
		Displaced: s.Displaced, Problem: s.Problem, HolderFormat: s.HolderFormat, NoTTL: noTTL(s), Unprobed: s.Unprobed,
		Mode: s.Mode, Limit: s.Limit}
	for _, w := range s.Queue {
		o.Queue = append(o.Queue, invocation.WaiterOf(w.Position, w.RequestID, w.Actor, w.PID, w.HostID, w.Since, w.Until, w.Seq))
	}
	if s.Corrupt != nil {
		o.Lock = nil // no holder can be read from the file
	} else if s.Holder != nil {
		o.RequestID = s.Holder.RequestID
		held, age := int64(s.HeldFor/time.Second), int64(s.SinceBeat/time.Second)
		o.HeldSeconds, o.AgeSeconds = &held, &age
		if s.State == events.StateStale {
			o.StaleSince = events.FormatLockTime(s.StaleSince)
		}
		if !noTTL(s) {
			o.StaleAt, o.StaleInSeconds = staleAt(s.State, s.StaleSince, s.SinceBeat, s.Holder)
		}
	}
	for _, h := range s.Shared {
		so := sharedObject{State: h.State, FencingToken: h.FencingToken, Lock: h.Holder, HeldSeconds: int64(h.HeldFor / time.Second),
			AgeSeconds: int64(h.SinceBeat / time.Second), JobPIDs: h.JobPIDs, Unprobed: h.Unprobed}
		if h.State == events.StateStale {
			so.StaleSince = events.FormatLockTime(h.StaleSince)
		}
		so.StaleAt, so.StaleInSeconds = staleAt(h.State, h.StaleSince, h.SinceBeat, &h.Holder)
		o.Holders = append(o.Holders, so)
	}
	return o
}

// staleAt is when a held holder turns stale without a heartbeat, and in how
// many seconds from now (its TTL past its last heartbeat); nothing for one
// in any other state.
func staleAt(state string, at time.Time, sinceBeat time.Duration, h *events.Record) (string, *int64) {
	if state != events.StateHeld || h == nil {
		return "", nil
	}
	in := int64((time.Duration(h.TTLSeconds)*time.Second - sinceBeat) / time.Second)
	in = max(in, 0)
	return events.FormatLockTime(at), &in
}
