package ledger

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/proc"
)

// decideNow is the decision's instant in the tests of decide.
var decideNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// holderOf is a holder of lock "x" under request id, judged state, its
// last heartbeat beatAgo before decideNow.
func holderOf(id, state string, beatAgo time.Duration) judged {
	hb := decideNow.Add(-beatAgo)
	return judged{state: state, h: &holding{rec: events.Record{LockVersion: events.LockVersion, LockName: "x", RequestID: id,
		Actor: "a", HostID: "vm", PID: 100, CreatedAt: events.FormatLockTime(hb), LastHeartbeatAt: events.FormatLockTime(hb),
		TTLSeconds: 60}, created: hb, heartbeat: hb}}
}

func foreignOf(id, state string) judged {
	j := holderOf(id, state, time.Minute)
	j.h.foreign = true
	return j
}

func sharedOf(id, state string, beatAgo time.Duration, limit int64) judged {
	j := holderOf(id, state, beatAgo)
	j.shared, j.limit = true, limit
	return j
}

func selfOf(j judged) judged { j.self = true; return j }

// TestDecide holds the one acquire decision to its rules: exclusive against
// exclusive, shared up to a limit, exclusive over shared and shared over
// exclusive, stale, dead and TTL-only holders, --force, steal --active and
// --supersede, the same request again, and the waiter queue's head.
func TestDecide(t *testing.T) {
	t.Parallel()
	const (
		held, stale, dead = events.StateHeld, events.StateStale, events.StateDead
	)
	acquire := takeover{}
	steal := takeover{steal: &StealRequest{}}
	stealActive := takeover{steal: &StealRequest{Active: true}}
	supersede := takeover{steal: &StealRequest{Supersede: true}}
	excl := AcquireRequest{Lock: "x", Identity: Identity{RequestID: "req_me"}}
	force := excl
	force.Force = true
	reclaim := excl
	reclaim.Reclaim = true
	shared := excl
	shared.Shared = true
	sharedForce := shared
	sharedForce.Force = true
	sem2 := excl
	sem2.Limit = 2
	sem2Force := sem2
	sem2Force.Force = true
	sem3 := excl
	sem3.Limit = 3
	x := func(j judged) *judged { return &j }

	type want struct {
		verdict verdict
		over    []string // request ids taken over, in order
		reasons []string // their reasons
		holder  string   // refuse, already: the holder named
		state   string   // refuse: the state recorded
		action  bool     // refuse: an active holder, action_refused for a steal
	}
	cases := []struct {
		name string
		req  AcquireRequest
		p    takeover
		f    facts
		want want
	}{
		// Exclusive against exclusive.
		{"free", excl, acquire, facts{}, want{verdict: grant}},
		{"free, steal", excl, stealActive, facts{}, want{verdict: grant}},
		{"held", excl, acquire, facts{exclusive: x(holderOf("req_b", held, 0))},
			want{verdict: refuse, holder: "req_b", state: held, action: true}},
		{"held, force takes no active holder", force, acquire, facts{exclusive: x(holderOf("req_b", held, 0))},
			want{verdict: refuse, holder: "req_b", state: held, action: true}},
		{"held, steal without --active", excl, steal, facts{exclusive: x(holderOf("req_b", held, 0))},
			want{verdict: refuse, holder: "req_b", state: held, action: true}},
		{"held, steal --active", excl, stealActive, facts{exclusive: x(holderOf("req_b", held, 0))},
			want{verdict: takeOver, over: []string{"req_b"}, reasons: []string{events.ReasonForcedActive}}},
		{"held, steal --supersede", excl, supersede, facts{exclusive: x(holderOf("req_b", held, 0))},
			want{verdict: takeOver, over: []string{"req_b"}, reasons: []string{events.ReasonSuperseded}}},
		{"stale", excl, acquire, facts{exclusive: x(holderOf("req_b", stale, 2*time.Minute))},
			want{verdict: refuse, holder: "req_b", state: stale}},
		{"stale, force", force, acquire, facts{exclusive: x(holderOf("req_b", stale, 2*time.Minute))},
			want{verdict: takeOver, over: []string{"req_b"}, reasons: []string{events.ReasonStaleForced}}},
		{"stale, steal", excl, steal, facts{exclusive: x(holderOf("req_b", stale, 2*time.Minute))},
			want{verdict: takeOver, over: []string{"req_b"}, reasons: []string{events.ReasonStaleForced}}},
		{"dead", excl, acquire, facts{exclusive: x(holderOf("req_b", dead, 0))},
			want{verdict: takeOver, over: []string{"req_b"}, reasons: []string{events.ReasonHolderDead}}},
		{"another tool's stale file, force", force, acquire, facts{exclusive: x(foreignOf("req_b", stale))},
			want{verdict: takeOver, over: []string{"req_b"}, reasons: []string{events.ReasonForeignLock}}},
		{"another tool's held file, steal --active", excl, stealActive, facts{exclusive: x(foreignOf("req_b", held))},
			want{verdict: takeOver, over: []string{"req_b"}, reasons: []string{events.ReasonForcedActive}}},

		// The same request again.
		{"same request, same process", excl, acquire, facts{exclusive: x(selfOf(holderOf("req_me", held, 0)))},
			want{verdict: already, holder: "req_me"}},
		{"same request, same process, even stale", excl, acquire, facts{exclusive: x(selfOf(holderOf("req_me", stale, time.Hour)))},
			want{verdict: already, holder: "req_me"}},
		{"same request, another process", excl, acquire, facts{exclusive: x(holderOf("req_me", held, 0))},
			want{verdict: refuse, holder: "req_me", state: held, action: true}},
		{"same request, another process, reclaim", reclaim, acquire, facts{exclusive: x(holderOf("req_me", held, 0))},
			want{verdict: takeOver, over: []string{"req_me"}, reasons: []string{events.ReasonReclaimed}}},
		{"another tool's file under my request id is not mine", excl, acquire, facts{exclusive: x(selfOf(foreignOf("req_me", held)))},
			want{verdict: refuse, holder: "req_me", state: held, action: true}},

		// Exclusive over shared.
		{"exclusive over a held shared holder", excl, acquire, facts{shared: []judged{sharedOf("req_b", dead, 0, 0), sharedOf("req_c", held, 0, 0)}},
			want{verdict: refuse, holder: "req_c", state: held, action: true}},
		{"exclusive over a stale shared holder", excl, acquire, facts{shared: []judged{sharedOf("req_b", stale, time.Hour, 0), sharedOf("req_c", dead, 0, 0)}},
			want{verdict: refuse, holder: "req_b", state: stale}},
		{"exclusive over stale and dead shared holders, force", force, acquire,
			facts{shared: []judged{sharedOf("req_c", stale, time.Hour, 0), sharedOf("req_b", dead, 0, 0)}},
			want{verdict: takeOver, over: []string{"req_b", "req_c"}, reasons: []string{events.ReasonHolderDead, events.ReasonStaleForced}}},
		{"exclusive over dead shared holders", excl, acquire, facts{shared: []judged{sharedOf("req_b", dead, 0, 0), sharedOf("req_c", dead, 0, 0)}},
			want{verdict: takeOver, over: []string{"req_b", "req_c"}, reasons: []string{events.ReasonHolderDead, events.ReasonHolderDead}}},
		{"exclusive over held shared holders, steal --active", excl, stealActive,
			facts{shared: []judged{sharedOf("req_b", held, 0, 0), sharedOf("req_c", stale, time.Hour, 0)}},
			want{verdict: takeOver, over: []string{"req_b", "req_c"}, reasons: []string{events.ReasonForcedActive, events.ReasonStaleForced}}},
		{"another tool's file beside shared holders", force, stealActive,
			facts{exclusive: x(foreignOf("req_f", dead)), shared: []judged{sharedOf("req_b", dead, 0, 0)}},
			want{verdict: refuse, holder: "req_b", state: held}},

		// Shared up to a limit.
		{"shared, free", shared, acquire, facts{}, want{verdict: grant}},
		{"shared beside shared", shared, acquire, facts{shared: []judged{sharedOf("req_b", held, 0, 0), sharedOf("req_c", held, 0, 0)}},
			want{verdict: grant}},
		{"semaphore with a free slot", sem2, acquire, facts{shared: []judged{sharedOf("req_b", held, 0, 2)}}, want{verdict: grant}},
		{"full semaphore", sem2, acquire, facts{shared: []judged{sharedOf("req_b", held, 0, 2), sharedOf("req_c", held, time.Second, 2)}},
			want{verdict: refuse, holder: "req_c", state: held, action: true}},
		{"full semaphore with a dead slot", sem2, acquire,
			facts{shared: []judged{sharedOf("req_b", held, 0, 2), sharedOf("req_c", dead, 0, 2)}},
			want{verdict: takeOver, over: []string{"req_c"}, reasons: []string{events.ReasonHolderDead}}},
		{"full semaphore with stale slots", sem2, acquire,
			facts{shared: []judged{sharedOf("req_b", stale, 2*time.Minute, 2), sharedOf("req_c", stale, 3*time.Minute, 2)}},
			want{verdict: refuse, holder: "req_c", state: stale}},
		{"full semaphore with stale slots, force: the stalest", sem2Force, acquire,
			facts{shared: []judged{sharedOf("req_b", stale, 2*time.Minute, 2), sharedOf("req_c", stale, 3*time.Minute, 2)}},
			want{verdict: takeOver, over: []string{"req_c"}, reasons: []string{events.ReasonStaleForced}}},
		{"full semaphore, steal --active: the stalest", sem2, stealActive,
			facts{shared: []judged{sharedOf("req_b", held, 5*time.Second, 2), sharedOf("req_c", held, time.Second, 2)}},
			want{verdict: takeOver, over: []string{"req_b"}, reasons: []string{events.ReasonForcedActive}}},
		{"limit differs from the holders'", sem3, acquire, facts{shared: []judged{sharedOf("req_b", held, 0, 2)}},
			want{verdict: invalid}},
		{"shared is not a limit", shared, acquire, facts{shared: []judged{sharedOf("req_b", held, 0, 2)}},
			want{verdict: invalid}},
		{"shared, same request, same process", sem2, acquire,
			facts{shared: []judged{selfOf(sharedOf("req_me", held, 0, 2)), sharedOf("req_b", held, 0, 2)}},
			want{verdict: already, holder: "req_me"}},
		{"shared, same request, another process", sem2, acquire, facts{shared: []judged{sharedOf("req_me", held, 0, 2)}},
			want{verdict: refuse, holder: "req_me", state: held}},

		// Shared over exclusive.
		{"shared over held exclusive", shared, acquire, facts{exclusive: x(holderOf("req_b", held, 0))},
			want{verdict: refuse, holder: "req_b", state: held, action: true}},
		{"shared over stale exclusive", shared, acquire, facts{exclusive: x(holderOf("req_b", stale, time.Hour))},
			want{verdict: refuse, holder: "req_b", state: stale}},
		{"shared over stale exclusive, force", sharedForce, acquire, facts{exclusive: x(holderOf("req_b", stale, time.Hour))},
			want{verdict: takeOver, over: []string{"req_b"}, reasons: []string{events.ReasonStaleForced}}},
		{"shared over dead exclusive", shared, acquire, facts{exclusive: x(holderOf("req_b", dead, 0))},
			want{verdict: takeOver, over: []string{"req_b"}, reasons: []string{events.ReasonHolderDead}}},
		{"shared over held exclusive, steal --active", shared, stealActive, facts{exclusive: x(holderOf("req_b", held, 0))},
			want{verdict: takeOver, over: []string{"req_b"}, reasons: []string{events.ReasonForcedActive}}},
		{"shared over another tool's dead file", shared, acquire, facts{exclusive: x(foreignOf("req_b", dead))},
			want{verdict: takeOver, over: []string{"req_b"}, reasons: []string{events.ReasonForeignLock}}},

		// The waiter queue: a lock free, or whose holder is dead, goes only
		// to the head of the queue; a steal and a held lock are not its
		// business.
		{"free, another waiter first", excl, acquire, facts{queuedAhead: true}, want{verdict: queued}},
		{"dead holder, another waiter first", excl, acquire, facts{exclusive: x(holderOf("req_b", dead, 0)), queuedAhead: true},
			want{verdict: queued}},
		{"free, another waiter first, steal", excl, steal, facts{queuedAhead: true}, want{verdict: grant}},
		{"held, another waiter first", excl, acquire, facts{exclusive: x(holderOf("req_b", held, 0)), queuedAhead: true},
			want{verdict: refuse, holder: "req_b", state: held, action: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := decide(c.req, c.p, c.f, decideNow)
			if d.verdict != c.want.verdict {
				t.Fatalf("verdict %d (%+v), want %d", d.verdict, d, c.want.verdict)
			}
			var over, reasons []string
			for _, o := range d.over {
				over, reasons = append(over, o.j.h.rec.RequestID), append(reasons, o.reason)
			}
			if !slices.Equal(over, c.want.over) || !slices.Equal(reasons, c.want.reasons) {
				t.Errorf("takes over %v for %v, want %v for %v", over, reasons, c.want.over, c.want.reasons)
			}
			if c.want.holder != "" && (d.holder == nil || d.holder.h.rec.RequestID != c.want.holder) {
				t.Errorf("names holder %+v, want %s", d.holder, c.want.holder)
			}
			switch d.verdict {
			case refuse:
				checkRefusal(t, c.req, d, c.want.state, c.want.action)
			case invalid:
				var inv *events.InvalidError
				if !errors.As(d.err, &inv) || inv.Field != "limit" {
					t.Errorf("err %v, want events.Invalid of limit", d.err)
				}
			default:
				if d.err != nil {
					t.Errorf("err %v on verdict %d", d.err, d.verdict)
				}
			}
		})
	}
}

// checkRefusal: a refusal is a *HeldError for a held lock, a *StaleError
// for a stale one, naming the holder decide names; an active holder's
// refusal says how a steal could take it.
func checkRefusal(t *testing.T, req AcquireRequest, d decision, state string, action bool) {
	t.Helper()
	if d.state != state {
		t.Errorf("records state %q, want %q", d.state, state)
	}
	if action != (d.how != "") {
		t.Errorf("how %q: want one %v", d.how, action)
	}
	var held *HeldError
	var st *StaleError
	switch {
	case errors.As(d.err, &held):
		if state != events.StateHeld || held.Holder.RequestID != d.holder.h.rec.RequestID || held.Lock != req.Lock {
			t.Errorf("HeldError %+v for state %s, holder %s", held, state, d.holder.h.rec.RequestID)
		}
		if held.SameRequest != (held.Holder.RequestID == req.RequestID && !d.holder.h.foreign) && !d.holder.shared {
			t.Errorf("HeldError.SameRequest %v", held.SameRequest)
		}
	case errors.As(d.err, &st):
		if state != events.StateStale || st.Holder.RequestID != d.holder.h.rec.RequestID || !st.StaleSince.Equal(d.holder.h.staleSince(decideNow)) {
			t.Errorf("StaleError %+v for state %s, holder %s", st, state, d.holder.h.rec.RequestID)
		}
	default:
		t.Errorf("refusal %v is neither a HeldError nor a StaleError", d.err)
	}
}

// TestDecideJudgedHolders runs judge → decide on holders the one rule
// judges: one whose process is gone here is dead and taken over; one on
// another host, or no process's, is judged by its TTL only, so a gone pid
// says nothing and only its TTL makes it stale.
func TestDecideJudgedHolders(t *testing.T) {
	t.Parallel()
	self := Host{ID: "vm", BootID: "boot-1"}
	probe := probeFunc(func(int) (proc.Liveness, string) { return proc.Gone, "" })
	req := AcquireRequest{Lock: "x", Identity: Identity{RequestID: "req_me"}}
	for _, c := range []struct {
		name    string
		host    string
		pid     int
		beatAgo time.Duration
		verdict verdict
		state   string
	}{
		{"gone here", "vm", 100, 0, takeOver, events.StateDead},
		{"another host, within its ttl", "other", 100, 0, refuse, events.StateHeld},
		{"another host, past its ttl", "other", 100, 2 * time.Minute, refuse, events.StateStale},
		{"no process, within its ttl", "vm", 0, 0, refuse, events.StateHeld},
		{"no process, past its ttl", "vm", 0, 2 * time.Minute, refuse, events.StateStale},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := holderOf("req_b", "", c.beatAgo)
			j.h.rec.HostID, j.h.rec.PID, j.h.bootID = c.host, c.pid, "boot-1"
			j.state, j.job = judge(j.h, decideNow, self, probe, 0)
			if j.state != c.state {
				t.Fatalf("judged %s, want %s", j.state, c.state)
			}
			d := decide(req, takeover{}, facts{exclusive: &j}, decideNow)
			if d.verdict != c.verdict {
				t.Errorf("verdict %d (%+v), want %d", d.verdict, d, c.verdict)
			}
		})
	}
}

type probeFunc func(pid int) (proc.Liveness, string)

func (f probeFunc) Probe(pid int) (proc.Liveness, string) { return f(pid) }
