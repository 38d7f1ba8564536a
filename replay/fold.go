package replay

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/verify"
)

// Holder is a ledger holder as the events show it: the v1 record plus what
// the locks table keeps beside it. It mirrors what ledger/ writes for a
// holder field by field (see ledger's newHolding and saveHolder).
type Holder struct {
	Record    events.Record
	Created   time.Time // the acquiring event's at, full precision
	Heartbeat time.Time // the last heartbeat's at (or Created)
	PIDStart  string
	BootID    string
	PIDNS     *int64 // the holder's PID namespace; nil in events from before it was recorded
	Token     int64  // fencing token
	// Targets are the extra lock files (other tools' formats) the holding
	// projects, as its acquiring event recorded them; never nil.
	Targets []events.Target
	// Began is how the holding began, from its acquiring event.
	Began Beginning
}

// Beginning is how a holding began: its acquiring event, lock_acquired
// (given a free lock, or one its waiter was next for) or lock_stolen (an
// operator's steal, or a take-over of a stale, dead or foreign holder:
// Reason says which, Note the operator's words, From the holding taken).
type Beginning struct {
	Seq    int64
	Type   events.Type
	Reason string // lock_stolen's reason (events.Reason*)
	Note   string
	From   string // the request id of the holding taken over; "" for another tool's lock
	// Waited is how long the acquirer had waited for the lock (0: it did
	// not wait).
	Waited float64
}

// File is the lock file the ledger writes for this holder, byte for byte.
func (h *Holder) File() []byte { return h.Record.File() }

// StaleSince is the instant the holder turns stale without a heartbeat.
func (h *Holder) StaleSince() time.Time {
	return h.Record.StaleAfter(h.Heartbeat)
}

// EventRef names one event briefly.
type EventRef struct {
	Seq       int64       `json:"seq"`
	Type      events.Type `json:"type"`
	At        string      `json:"at"`
	Actor     string      `json:"actor"`
	RequestID string      `json:"request_id"`
}

// Lock is one lock's folded state. Its JSON is the form a snapshot, or
// a fold kept between runs, holds it in (see stateJSON).
type Lock struct {
	Name string `json:"name"`
	// Held: the ledger has a holder. A lock held only by a foreign lock file
	// (another tool's) is not in the events until the ledger meets it, and
	// replay shows it free.
	Held bool `json:"held,omitempty"`
	// Holder is the current holder when Held, otherwise the last one (the
	// locks table keeps it in a free row); nil if the ledger never held it.
	Holder *Holder `json:"holder,omitempty"`
	// UpdatedSeq is the last event that changed the lock's row: what the
	// locks table's updated_seq holds.
	UpdatedSeq int64 `json:"updated_seq,omitempty"`
	// Last is the last event of any type on this lock.
	Last EventRef `json:"last"`

	// Shared are the shared holders (mode shared: readers, or a
	// semaphore's slots), ordered by request id; Limit is their
	// semaphore's slots (0: none). They are lock_holders' rows, not the
	// locks table's: Held, Holder and UpdatedSeq are the exclusive side's.
	Shared []*Holder `json:"shared,omitempty"`
	Limit  int64     `json:"limit,omitempty"`

	// Claims are the requests the log has given the lock to and not taken
	// back (released or stolen from): two exclusive ones, an exclusive and
	// a shared one, or more shared ones than the limit are an overlap.
	// Only the fold reads them.
	Claims []claim `json:"claims,omitempty"`

	// Queued are the waiters queued for the lock (acquire_blocked with
	// until), in the order they joined, until their request's next
	// lock_acquired, lock_stolen or acquire_blocked on it (a renewal of
	// the place, queued_seq, takes the place it renews); those whose
	// until (at most events.WaiterTTL after the record) has passed by an
	// event of the lock are dropped. Whether a waiter's process died
	// cannot be told after the fact: it shows until its place lapses.
	Queued []Queued `json:"queued,omitempty"`
}

// Queued is one waiter in a lock's queue.
type Queued struct {
	Seq       int64 // the record it joined with
	RequestID string
	Actor     string
	HostID    string
	PID       int
	Since     time.Time // when it joined
	Until     time.Time // when its place lapses unless renewed
}

// QueueAt is the lock's queue at t: the waiters whose place had not
// lapsed.
func (l *Lock) QueueAt(t time.Time) []Queued {
	if l == nil {
		return nil
	}
	var out []Queued
	for _, q := range l.Queued {
		if t.Before(q.Until) && !t.Before(q.Since) {
			out = append(out, q)
		}
	}
	return out
}

// queue keeps l.Queued (see Lock.Queued).
func (l *Lock) queue(ev *Event) {
	switch ev.Type {
	case events.AcquireBlocked, events.LockAcquired, events.LockStolen:
	default:
		return
	}
	kept := l.Queued[:0]
	for _, q := range l.Queued {
		if q.RequestID != ev.RequestID && ev.Time.Before(q.Until) {
			kept = append(kept, q)
		}
	}
	l.Queued = kept
	if ev.Type != events.AcquireBlocked || ev.Until == "" {
		return
	}
	until, err := events.ParseTime(ev.Until)
	if err != nil {
		return
	}
	if lapse := ev.Time.Add(events.WaiterTTL); lapse.Before(until) {
		until = lapse
	}
	q := Queued{Seq: ev.Seq, RequestID: ev.RequestID, Actor: ev.Actor, HostID: ev.HostID, PID: ev.PID, Since: ev.Time, Until: until}
	if ev.QueuedSeq > 0 {
		q.Seq = ev.QueuedSeq
		if since, err := events.ParseTime(ev.QueuedAt); err == nil {
			q.Since = since
		}
	}
	i, _ := slices.BinarySearchFunc(l.Queued, q.Seq, func(x Queued, seq int64) int { return cmp.Compare(x.Seq, seq) })
	l.Queued = slices.Insert(l.Queued, i, q)
}

// sharedIndex is the index of request id in l.Shared, or -1.
func (l *Lock) sharedIndex(id string) int {
	for i, h := range l.Shared {
		if h.Record.RequestID == id {
			return i
		}
	}
	return -1
}

func (l *Lock) dropShared(id string) bool {
	i := l.sharedIndex(id)
	if i < 0 {
		return false
	}
	l.Shared = append(l.Shared[:i:i], l.Shared[i+1:]...)
	return true
}

func (l *Lock) addShared(h *Holder, limit int64) {
	l.Limit = limit
	i := sort.Search(len(l.Shared), func(i int) bool { return l.Shared[i].Record.RequestID >= h.Record.RequestID })
	l.Shared = append(l.Shared[:i:i], append([]*Holder{h}, l.Shared[i:]...)...)
}

// SharedAt is the state of the shared side at t: the strongest of its
// holders' states (held, else stale), free when there are none.
func (l *Lock) SharedAt(t time.Time) string {
	if l == nil || len(l.Shared) == 0 {
		return events.StateFree
	}
	state := events.StateStale
	for _, h := range l.Shared {
		if !t.After(h.StaleSince()) {
			state = events.StateHeld
		}
	}
	return state
}

// claim is one request holding a lock as far as the log says.
type claim struct {
	RequestID string `json:"request_id"`
	Token     int64  `json:"token"`
	Seq       int64  `json:"seq"`
	At        string `json:"at"`
	Shared    bool   `json:"shared,omitempty"`
}

// StateAt is the lock's state at instant t by the ledger's rules, as far as
// events alone can tell: free, held, or stale (no heartbeat within the
// TTL). "dead" needs the holder's process table at that instant, which no
// event records, so a dead holder shows as held or stale.
//
// A lock held shared is held while any of its shared holders is, else stale.
func (l *Lock) StateAt(t time.Time) string {
	if l == nil {
		return events.StateFree
	}
	if !l.Held {
		return l.SharedAt(t)
	}
	if t.After(l.Holder.StaleSince()) {
		return events.StateStale
	}
	return events.StateHeld
}

// Anomaly is an event that the ledger's own write path would never have
// appended in the state replay had reached (e.g. a heartbeat from a request
// that does not hold the lock): the sign of an event forged with a valid
// hash, or of a lost event.
type Anomaly struct {
	Seq    int64       `json:"seq"`
	Kind   verify.Kind `json:"kind"` // KindOverlap, KindInconsistent or KindFencingToken
	Lock   string      `json:"lock_name"`
	Detail string      `json:"detail"`
}

// maxAnomalies bounds how many anomalies a State keeps (it counts them all).
const maxAnomalies = 100

// State is the fold of a prefix of the event log: one Lock per lock name
// seen, nothing per event.
type State struct {
	locks map[string]*Lock
	// Seq is the seq of the last event applied; Events counts them.
	Seq    int64
	Events int64
	// Anomalies lists the first anomalies; AnomalyCount counts them all.
	Anomalies    []Anomaly
	AnomalyCount int
	// keepOverlaps makes Overlaps list every overlap, not the first ones.
	keepOverlaps bool
	overlaps     []Overlap
}

// NewState is the state before the first event: every lock free.
func NewState() *State { return &State{locks: map[string]*Lock{}} }

// Lock returns the named lock, nil if no event named it.
func (s *State) Lock(name string) *Lock { return s.locks[name] }

// Locks returns every lock seen, ordered by name.
func (s *State) Locks() []*Lock {
	return slices.SortedFunc(maps.Values(s.locks), func(a, b *Lock) int { return strings.Compare(a.Name, b.Name) })
}

// Len is the number of locks seen.
func (s *State) Len() int { return len(s.locks) }

// Apply folds one event into the state. Events must come in seq order.
//
//   - lock_acquired, lock_stolen: the envelope's request, actor, host and pid
//     and the payload's ttl, intent, metadata, fencing token, pid start,
//     boot id and targets become the holder; created and last heartbeat are the event's at.
//   - lock_heartbeat: the holder's last heartbeat moves to at.
//   - lock_released: frees the lock when the ledger's holder is the request
//     that released (not forced) or released_request_id (forced). A forced
//     release of a foreign lock (no ledger holder) changes nothing. A
//     release carrying superseded_by (another tool's lock file displaced a
//     stale or dead holder) is forced and frees released_request_id
//     like any other; the foreign holder is not the ledger's, so the lock
//     reads free. A release of the ledger's holder whose fencing_token is
//     not that holding's is an anomaly (the lock is freed all the same).
//   - heartbeat_failed, acquire_blocked, action_refused (a refusal records
//     who asked, not a change), lock_projected (project rewrites the
//     projections to match this fold, it never changes the holder) and
//     job_processes (a job's leftover processes, after its lock's own
//     events) and fence_rejected (a stale write a fence refused; its
//     stale_token is the writer's, no holding's): change nothing but Last.
//   - ledger_exported, ledger_verified, ledger_projected: about the ledger,
//     not a lock (they have no lock_name): change no lock, and make none.
func (s *State) Apply(ev *Event) {
	s.Seq = ev.Seq
	s.Events++
	if ev.Type.LedgerWide() {
		return
	}
	l := s.locks[ev.LockName]
	if l == nil {
		// A copy of its own: the key stays small and near the others,
		// not inside the first body that named the lock.
		l = &Lock{Name: strings.Clone(ev.LockName)}
		s.locks[l.Name] = l
	}
	l.Last = EventRef{Seq: ev.Seq, Type: ev.Type, At: ev.At, Actor: ev.Actor, RequestID: ev.RequestID}
	s.claim(l, ev)
	l.queue(ev)
	switch ev.Type {
	case events.LockAcquired, events.LockStolen:
		if ev.Type == events.LockStolen && ev.PreviousLock != nil {
			prev := ev.PreviousLock.RequestID
			if !l.dropShared(prev) && ev.Mode == events.ModeShared && l.heldBy(prev) {
				// A shared holder took over a dead or stale exclusive one.
				l.Held, l.UpdatedSeq = false, ev.Seq
			}
		}
		if ev.Mode == events.ModeShared {
			// The claims have reported a request acquiring twice.
			l.dropShared(ev.RequestID)
			l.addShared(holderOf(ev), ev.Limit)
			return
		}
		l.Held, l.Holder, l.UpdatedSeq = true, holderOf(ev), ev.Seq
	case events.LockHeartbeat:
		if i := l.sharedIndex(ev.RequestID); i >= 0 && !l.heldBy(ev.RequestID) {
			l.Shared[i] = beat(l.Shared[i], ev)
			return
		}
		if !l.heldBy(ev.RequestID) {
			s.anomaly(ev, verify.KindInconsistent, "heartbeat from request "+ev.RequestID+", which does not hold the lock")
			return
		}
		l.Holder, l.UpdatedSeq = beat(l.Holder, ev), ev.Seq
	case events.LockReleased:
		released := ev.RequestID
		if ev.Forced {
			released = ev.ReleasedRequestID
		}
		if i := l.sharedIndex(released); i >= 0 && !l.heldBy(released) {
			s.checkToken(ev, released, l.Shared[i].Token)
			l.dropShared(released)
			return
		}
		if !l.Held {
			if !ev.Forced {
				s.anomaly(ev, verify.KindInconsistent, "release by request "+ev.RequestID+" of a lock the ledger does not hold")
			}
			return // a forced release of a foreign lock: the ledger never held it
		}
		if released != l.Holder.Record.RequestID {
			s.anomaly(ev, verify.KindInconsistent, fmt.Sprintf("release of request %s while request %s holds the lock", released, l.Holder.Record.RequestID))
			return
		}
		s.checkToken(ev, released, l.Holder.Token)
		l.Held, l.UpdatedSeq = false, ev.Seq
	}
}

// heldBy reports whether request id is the lock's exclusive holder.
func (l *Lock) heldBy(id string) bool { return l.Held && l.Holder.Record.RequestID == id }

// beat is h after the heartbeat ev.
func beat(h *Holder, ev *Event) *Holder {
	b := *h
	b.Heartbeat = ev.Time
	b.Record.LastHeartbeatAt = lockTime(ev)
	return &b
}

// checkToken reports a release of request released whose fencing token
// is not its holding's. The ledger writes the released holding's own
// token; the lock is freed all the same, as the log now reads.
func (s *State) checkToken(ev *Event, released string, token int64) {
	if ev.FencingToken != token {
		s.anomaly(ev, verify.KindFencingToken, fmt.Sprintf("release of request %s with fencing_token %d, but its holding's token is %d",
			released, ev.FencingToken, token))
	}
}

// claim keeps the lock's claims: lock_acquired adds its request (another
// request among them is an overlap), lock_stolen hands the lock over to its
// request alone, and lock_released removes the holder it names: the
// releasing request, released_request_id when forced, or the holder whose
// fencing token it carries. A release that names no claim frees nobody.
func (s *State) claim(l *Lock, ev *Event) {
	switch ev.Type {
	case events.LockAcquired:
		mine := false
		shared := ev.Mode == events.ModeShared
		others := 0
		for _, c := range l.Claims {
			mine = mine || c.RequestID == ev.RequestID
			if c.RequestID != ev.RequestID {
				others++
			}
		}
		for _, c := range l.Claims {
			// Shared claims coexist, up to the limit the new one carries.
			if shared && c.Shared && (ev.Limit == 0 || int64(others) < ev.Limit) {
				continue
			}
			if c.RequestID != ev.RequestID {
				o := Overlap{Lock: l.Name, Seq: ev.Seq, At: ev.At, RequestID: ev.RequestID,
					HolderSeq: c.Seq, HolderAt: c.At, HolderRequestID: c.RequestID}
				if s.keepOverlaps {
					s.overlaps = append(s.overlaps, o)
				}
				s.anomaly(ev, verify.KindOverlap, o.String()+": two holders at once (a take-over is lock_stolen)")
				break
			}
		}
		if mine {
			s.anomaly(ev, verify.KindInconsistent, "lock_acquired again by request "+ev.RequestID+", which already holds the lock")
		} else {
			l.Claims = append(l.Claims, claimOf(ev))
		}
	case events.LockStolen:
		if ev.Mode == events.ModeShared {
			// One slot (or the dead exclusive holder) handed over: the
			// previous holder's claim goes, the others stay.
			l.Claims = slices.DeleteFunc(l.Claims, func(c claim) bool {
				return ev.PreviousLock != nil && c.RequestID == ev.PreviousLock.RequestID
			})
			l.Claims = append(l.Claims, claimOf(ev))
			return
		}
		l.Claims = append(l.Claims[:0], claimOf(ev))
	case events.LockReleased:
		released := ev.RequestID
		if ev.Forced && ev.ReleasedRequestID != "" {
			released = ev.ReleasedRequestID
		}
		l.Claims = slices.DeleteFunc(l.Claims, func(c claim) bool {
			return c.RequestID == released || (ev.FencingToken != 0 && c.Token == ev.FencingToken)
		})
	}
}

// claimOf is the claim an acquiring event makes.
func claimOf(ev *Event) claim {
	return claim{RequestID: ev.RequestID, Token: ev.FencingToken, Seq: ev.Seq, At: ev.At, Shared: ev.Mode == events.ModeShared}
}

func (s *State) anomaly(ev *Event, kind verify.Kind, detail string) {
	s.AnomalyCount++
	if len(s.Anomalies) < maxAnomalies {
		s.Anomalies = append(s.Anomalies, Anomaly{Seq: ev.Seq, Kind: kind, Lock: ev.LockName, Detail: detail})
	}
}

// holderOf builds the holder an acquiring event records, exactly as the
// ledger builds it (ledger's newHolding).
func holderOf(ev *Event) *Holder {
	md := ev.Metadata
	if md == nil {
		md = map[string]string{}
	}
	targets := ev.Targets
	if targets == nil {
		targets = []events.Target{}
	}
	at := lockTime(ev)
	return &Holder{
		Targets: targets,
		Record: events.Record{
			LockVersion: events.LockVersion, LockName: ev.LockName, RequestID: ev.RequestID, Actor: ev.Actor,
			Intent: ev.Intent, IntentVersion: ev.IntentVersion, HostID: ev.HostID, PID: ev.PID,
			CreatedAt: at, LastHeartbeatAt: at,
			TTLSeconds: ev.TTLSeconds, Metadata: md,
		},
		Created: ev.Time, Heartbeat: ev.Time, PIDStart: ev.PIDStart, BootID: ev.BootID, PIDNS: ev.PIDNS, Token: ev.FencingToken,
		Began: beginning(ev),
	}
}

func beginning(ev *Event) Beginning {
	b := Beginning{Seq: ev.Seq, Type: ev.Type, Reason: ev.Reason, Note: ev.Note, Waited: ev.WaitedSeconds}
	if ev.PreviousLock != nil && ev.Reason != events.ReasonForeignLock {
		b.From = ev.PreviousLock.RequestID
	}
	return b
}

// lockTime is events.FormatLockTime(ev.Time) (at to the second), cut from
// at itself when it is in the form the ledger writes (events.TimeFormat),
// the form it was parsed from: no formatting of the time for every event.
func lockTime(ev *Event) string {
	if a := ev.At; len(a) == len(events.TimeFormat) && a[19] == '.' && a[len(a)-1] == 'Z' {
		return a[:19] + "Z"
	}
	return events.FormatLockTime(ev.Time)
}
