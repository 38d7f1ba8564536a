package timeline

import (
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/replay"
)

// span is a stretch of time on the plot.
type span struct{ from, to time.Time }

// longest bounds the durations events state (a wait, a TTL), so that a
// number no time can hold moves no mark off the plot's arithmetic.
const longest = 100 * 365 * 24 * time.Hour

// seconds is s seconds, within [0, longest].
func seconds(s float64) time.Duration {
	if !(s > 0) {
		return 0
	}
	if s >= longest.Seconds() {
		return longest
	}
	return time.Duration(s * float64(time.Second))
}

// waitedSince is when the wait ev records began.
func waitedSince(ev *replay.Event) time.Time { return ev.Time.Add(-seconds(ev.WaitedSeconds)) }

// waits finds when each holding's holder began to wait for it, for the
// holdings that waited: the earliest of the wait its opening event
// records, and the start of the waits that gave up before it
// (acquire_blocked) by the same request on the same lock, or by the same
// actor on that lock with nothing else of that actor's there in between.
func waits(p *Page) map[*replay.Holding]time.Time {
	type key struct{ lock, who string }
	byRequest, byActor := map[key]time.Time{}, map[key]time.Time{}
	earliest := func(m map[key]time.Time, k key, t time.Time) {
		if old, ok := m[k]; !ok || t.Before(old) {
			m[k] = t
		}
	}
	began := map[int64]time.Time{}
	for _, ev := range p.Events {
		if ev.Type.LedgerWide() {
			continue
		}
		rk, ak := key{ev.LockName, ev.RequestID}, key{ev.LockName, ev.Actor}
		switch ev.Type {
		case events.AcquireBlocked:
			earliest(byRequest, rk, waitedSince(ev))
			earliest(byActor, ak, waitedSince(ev))
		case events.ActionRefused:
			// a refusal is no sign that the actor stopped waiting
		case events.LockAcquired, events.LockStolen:
			var from time.Time
			for _, t := range []time.Time{byRequest[rk], byActor[ak]} {
				if !t.IsZero() && (from.IsZero() || t.Before(from)) {
					from = t
				}
			}
			if from.IsZero() || from.After(ev.Time) {
				from = ev.Time
			}
			delete(byRequest, rk)
			delete(byActor, ak)
			if from.Before(ev.Time) {
				began[ev.Seq] = from
			}
		default:
			delete(byActor, ak)
		}
	}
	out := map[*replay.Holding]time.Time{}
	for _, h := range p.Holdings {
		from, ok := began[h.Opened.Seq]
		if h.Opened.WaitedSeconds > 0 {
			if t := waitedSince(h.Opened); !ok || t.Before(from) {
				from, ok = t, true
			}
		}
		if ok {
			out[h] = from
		}
	}
	return out
}

// staleSpans finds, for each holding, the spans in which its TTL had run
// out since its acquisition or its last heartbeat: stale from there until
// a late heartbeat, or its end. A holding begun before the window is
// judged from the window's start, the latest its last heartbeat can have
// been.
func staleSpans(l *layout) map[*replay.Holding][]span {
	type key struct{ lock, rid string }
	beats := map[key][]*replay.Event{}
	for _, ev := range l.p.Events {
		if ev.Type == events.LockHeartbeat {
			k := key{ev.LockName, ev.RequestID}
			beats[k] = append(beats[k], ev)
		}
	}
	out := map[*replay.Holding][]span{}
	for _, h := range l.p.Holdings {
		ttl := seconds(float64(h.Opened.TTLSeconds))
		if ttl <= 0 {
			continue
		}
		end, _ := l.holdingEnd(h)
		last := h.Start()
		if s := l.p.Since; !s.IsZero() && last.Before(s) {
			last = s
		}
		var spans []span
		for _, b := range beats[key{h.Lock, h.Opened.RequestID}] {
			if b.Seq <= h.Opened.Seq || h.Ended != nil && b.Seq >= h.Ended.Seq {
				continue
			}
			if due := last.Add(ttl); b.Time.After(due) {
				spans = append(spans, span{due, b.Time})
			}
			last = b.Time
		}
		if due := last.Add(ttl); end.After(due) {
			spans = append(spans, span{due, end})
		}
		if len(spans) > 0 {
			out[h] = spans
		}
	}
	return out
}

// Bar labels: the actor's name inside its bar, when it fits.
const (
	labelSize = 13
	labelPad  = 5
)

// escapedRunes is s as termtext shows it, one piece per character of s, so
// that a cut between pieces never splits an escape.
func escapedRunes(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		j := i + 1
		for j < len(s) && s[j]&0xC0 == 0x80 {
			j++
		}
		out = append(out, termtext.Escape(s[i:j]))
		i = j
	}
	return out
}
