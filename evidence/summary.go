package evidence

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/replay"
)

// summarizer folds the events that opened the holdings open at the
// period's start, then the period's events, into a Summary. The maker and
// the checker run the same fold, so a bundle's summary is what its events
// say.
type summarizer struct {
	fold     *replay.HoldingFold
	firstSeq int64
	before   map[int64]bool // seqs of the opened_before events
	locks    map[string]*LockSummary
	waiters  map[string]map[string]bool
}

func newSummarizer(firstSeq int64) *summarizer {
	f := replay.NewHoldingFold()
	f.KeepOverlaps()
	return &summarizer{fold: f, firstSeq: firstSeq, before: map[int64]bool{}, locks: map[string]*LockSummary{}, waiters: map[string]map[string]bool{}}
}

// openedBefore folds an event that opened a holding open at the start.
func (s *summarizer) openedBefore(ev *replay.Event) {
	s.before[ev.Seq] = true
	s.fold.Apply(ev)
}

func (s *summarizer) lock(name string) *LockSummary {
	l := s.locks[name]
	if l == nil {
		l = &LockSummary{Lock: name, Holdings: []HoldingLine{}, Refusals: []Item{}, Steals: []Item{}, ForcedReleases: []Item{}, FenceRejections: []Item{}}
		s.locks[name] = l
	}
	return l
}

func item(ev *replay.Event, what, detail string) Item {
	return Item{Seq: ev.Seq, At: ev.At, Actor: ev.Actor, Host: ev.HostID, RequestID: ev.RequestID, What: what, Detail: detail}
}

// apply folds one event of the period, in seq order.
func (s *summarizer) apply(ev *replay.Event) {
	s.fold.Apply(ev)
	if ev.Type.LedgerWide() || ev.LockName == "" {
		return
	}
	l := s.lock(ev.LockName)
	switch ev.Type {
	case events.AcquireBlocked:
		l.BlockedEvents++
		w := s.waiters[ev.LockName]
		if w == nil {
			w = map[string]bool{}
			s.waiters[ev.LockName] = w
		}
		if !w[ev.RequestID] {
			w[ev.RequestID] = true
			l.Waits++
		}
	case events.ActionRefused:
		l.Refusals = append(l.Refusals, item(ev, ev.Action, ev.Error))
	case events.LockStolen:
		from := ""
		if p := ev.PreviousLock; p != nil {
			from = fmt.Sprintf("from request %s (actor %s, host %s)", p.RequestID, p.Actor, p.HostID)
		}
		if ev.Note != "" {
			from = strings.TrimSpace(from + "; note: " + ev.Note)
		}
		l.Steals = append(l.Steals, item(ev, ev.Reason, from))
	case events.LockReleased:
		if ev.Forced {
			detail := "released request " + ev.ReleasedRequestID
			if ev.Note != "" {
				detail += "; note: " + ev.Note
			}
			if ev.AuthorizedBy != "" {
				detail += "; authorized by " + ev.AuthorizedBy
			}
			what := "forced"
			if ev.DisplacedByPath != "" {
				what = "displaced by " + ev.DisplacedByFormat + " file " + ev.DisplacedByPath
			}
			l.ForcedReleases = append(l.ForcedReleases, item(ev, what, detail))
		}
	case events.FenceRejected:
		l.FenceRejections = append(l.FenceRejections, item(ev, ev.Fence+" "+ev.Resource,
			fmt.Sprintf("token %d refused, the resource had seen %d", ev.StaleToken, ev.CurrentToken)))
	}
}

func (s *summarizer) line(h *replay.Holding) HoldingLine {
	o := h.Opened
	mode := events.ModeExclusive
	if h.Shared {
		mode = events.ModeShared
	}
	hl := HoldingLine{RequestID: o.RequestID, Actor: o.Actor, Host: o.HostID, Mode: mode, FromSeq: o.Seq, FromAt: o.At, BeforePeriod: s.before[o.Seq]}
	if e := h.Ended; e != nil {
		hl.ToSeq, hl.ToAt, hl.EndedBy = e.Seq, e.At, string(e.Type)
	}
	return hl
}

// finish is the summary of what was folded.
func (s *summarizer) finish() Summary {
	hs := append([]*replay.Holding{}, s.fold.Closed...)
	hs = append(hs, s.fold.Open()...)
	for _, h := range hs {
		if h.Ended != nil && h.Ended.Seq < s.firstSeq {
			continue // ended by another opened_before event: before the period
		}
		l := s.lock(h.Lock)
		l.Holdings = append(l.Holdings, s.line(h))
	}
	out := Summary{Locks: []LockSummary{}, Overlaps: []replay.Overlap{}}
	for _, name := range slices.Sorted(maps.Keys(s.locks)) {
		l := s.locks[name]
		slices.SortStableFunc(l.Holdings, func(a, b HoldingLine) int { return int(a.FromSeq - b.FromSeq) })
		out.Locks = append(out.Locks, *l)
	}
	for _, o := range s.fold.Overlaps() {
		if o.Seq >= s.firstSeq {
			out.Overlaps = append(out.Overlaps, o)
		}
	}
	out.Exclusive = "no two exclusive holdings of a lock overlapped in the period"
	if n := len(out.Overlaps); n > 0 {
		out.Exclusive = fmt.Sprintf("%d acquisitions gave a lock while another request still held it (overlaps lists each interval)", n)
	}
	return out
}
