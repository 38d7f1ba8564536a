package ledger

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/lockfile"
	"github.com/lockledger/lockledger/store"
)

// LockStatus is one lock's state at an instant.
type LockStatus struct {
	Name         string
	State        string
	JobPIDs      []int // processes of the holder's job still running here, its own process gone
	Holder       *events.Record
	FencingToken int64
	Foreign      bool
	// OwnLayout: the foreign holder's lock file is in exactly the layout
	// the ledger writes, so it may be the ledger's own holder from events
	// it no longer has (a restore, an accepted rollback), or a tool's that
	// writes that layout.
	OwnLayout  bool
	Corrupt    *UnreadableFile // the holder is an unreadable lock file (Holder is a placeholder)
	Interloper bool            // a foreign file sits at the path of a lock the ledger holds
	// Unreadable is that file when it is no lock at all (project puts the
	// ledger's file back in its place).
	Unreadable *UnreadableFile
	// Displaced is the ledger's own holder when another tool's lock at one
	// of its paths has taken the lock (recorded by the next writer).
	Displaced  *events.Record
	HeldFor    time.Duration // never negative (heldFor)
	SinceBeat  time.Duration // negative for a heartbeat ahead of the judging clock
	StaleSince time.Time
	Unprobed   string // why the holder's pid cannot be probed from here (proc.Unprobed)
	Path       string
	// Problem: the lock's file could not be read (a symlink, a directory,
	// no permission, or no locks directory); the rest is the locks
	// table's alone.
	Problem string

	// HolderFormat is the format of the other tool's file that holds the
	// lock, when it displaced the ledger's holder ("" otherwise).
	HolderFormat string

	// Mode is events.ModeShared when shared holders hold the lock (Shared,
	// ordered by request id; Holder is then the stalest in the lock's
	// state), Limit their semaphore's slots (0: none).
	Mode   string
	Limit  int64
	Shared []SharedHolder

	// Queue is the lock's waiters, next first (see queue.go).
	Queue []Waiter
}

// Status reads one lock. It takes no lock and changes nothing.
func (l *Ledger) Status(ctx context.Context, lock string) (*LockStatus, error) {
	if err := events.ValidateLockName(lock); err != nil {
		return nil, err
	}
	r, err := store.LoadRow(ctx, l.store, lock)
	if err != nil {
		return nil, err
	}
	v, err := l.inspect(lock, r)
	if err != nil {
		return nil, err
	}
	now, err := l.judgeTime(ctx)
	if err != nil {
		return nil, err
	}
	s := l.status(v, now)
	if s.Holder == nil {
		sh, err := loadShared(ctx, l.store, lock)
		if err != nil {
			return nil, err
		}
		l.addShared(s, sh, now)
	}
	qs, err := l.queues(ctx, l.store, lock, now)
	if err != nil {
		return nil, err
	}
	s.Queue = qs[lock]
	return s, nil
}

func (l *Ledger) status(v *view, now time.Time) *LockStatus {
	var displaced *events.Record
	var format string
	if d, err := l.displacedBy(v, now, 0); err == nil && d != nil {
		// What the next writer will record: the other tool's lock holds it.
		rec := v.holder.rec
		displaced, format = &rec, d.format
		v = &view{name: v.name, row: v.row, file: v.file, holder: d.h}
	}
	if v.holder == nil {
		// Another tool's lock at a path the lock remembers holds it.
		if f, err := l.foreignAt(v.name, v, nil, now, 0); err == nil && f != nil {
			v = &view{name: v.name, row: v.row, file: v.file, holder: f}
		}
	}
	state, job := judge(v.holder, now, l.host, l.probe, 0)
	s := &LockStatus{Name: v.name, State: state, JobPIDs: job, Path: l.files.Path(v.name), Interloper: v.interloper,
		Displaced: displaced, HolderFormat: format, Unprobed: l.unprobedOf(v.holder, state)}
	if v.interloper {
		if _, err := ParseLockFile(v.file.Data); err != nil {
			s.Unreadable = unreadableFile(v.file)
		}
	}
	if h := v.holder; h != nil {
		rec := h.rec
		s.Holder, s.FencingToken, s.Foreign, s.Corrupt = &rec, h.token, h.foreign, h.corrupt
		s.OwnLayout = h.foreign && h.corrupt == nil && format == "" && ledgerFile(v.name, v.file.Data)
		if h.corrupt == nil {
			s.HeldFor, s.SinceBeat = heldFor(now, h.created), now.Sub(h.heartbeat)
			s.StaleSince = h.staleSince(now)
		}
	}
	return s
}

// unprobedOf is LockStatus.Unprobed: "" for none, dead, foreign or probed here.
func (l *Ledger) unprobedOf(h *holding, state string) (why string) {
	if h != nil && !h.foreign && h.corrupt == nil && state != events.StateDead && state != events.StateFree {
		why, _ = unprobed(h, l.host)
	}
	return why
}

// List returns every lock that is not free or has waiters queued: the ledger's and foreign lock
// files in the locks directory, ordered by name. A lock whose file cannot
// be read is listed from the locks table alone, with its Problem, and
// does not stop the others.
func (l *Ledger) List(ctx context.Context) ([]*LockStatus, error) {
	rows, err := store.LoadRows(ctx, l.store)
	if err != nil {
		return nil, err
	}
	byName := map[string]*store.Row{}
	for _, r := range rows {
		byName[r.Name] = r
	}
	// A lock known only by its file or its shared holders has no row.
	known := func(name string) {
		if _, seen := byName[name]; !seen {
			byName[name] = nil
		}
	}
	names, err := l.files.LockNames(false)
	if err != nil && l.files.Broken() == nil {
		return nil, err
	}
	for name := range names {
		known(name)
	}
	now, err := l.judgeTime(ctx)
	if err != nil {
		return nil, err
	}
	all, err := loadAllShared(ctx, l.store)
	if err != nil {
		return nil, err
	}
	shared := map[string][]*sharedHolding{}
	for _, s := range all {
		shared[s.rec.LockName] = append(shared[s.rec.LockName], s)
		known(s.rec.LockName)
	}
	queues, err := l.queues(ctx, l.store, "", now)
	if err != nil {
		return nil, err
	}
	var out []*LockStatus
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		v, err := l.inspect(name, byName[name])
		if err != nil {
			s := l.status(interpret(name, byName[name], lockfile.State{}, lockfile.State{}), now)
			if s.State == events.StateFree && l.files.Broken() != nil {
				continue // the directory's problem is reported once, by Open
			}
			s.Problem = err.Error()
			out = append(out, s)
			continue
		}
		s := l.status(v, now)
		l.addShared(s, shared[name], now)
		s.Queue = queues[name]
		if s.State != events.StateFree || len(s.Queue) > 0 {
			out = append(out, s)
		}
	}
	return out, nil
}

// heldFor is how long a holding begun at created has lasted at now: 0,
// not less, when created is ahead of the judging clock (the writer's host,
// or the database's clock, ahead of the reader's). A heartbeat's age keeps
// its sign instead: one in the future is itself a finding (formats.MaxClockSkew).
func heldFor(now, created time.Time) time.Duration { return max(now.Sub(created), 0) }

// seconds is a span an event records (held, waited), which the schemas
// bound below by 0: a clock stepped back within it makes it 0.
func seconds(d time.Duration) float64 {
	return float64(max(d, 0).Milliseconds()) / 1000
}
