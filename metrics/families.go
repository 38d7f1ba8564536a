package metrics

import (
	"maps"
	"slices"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/replay"
)

// Checkpoint is the newest signed checkpoint the ledger stores.
type Checkpoint struct {
	Size    int64
	Created time.Time
}

// Families are the metrics of the fold at now, in the order they are
// written; cp is the newest checkpoint (nil: none).
func (f *Fold) Families(now time.Time, cp *Checkpoint) []Family {
	held := newFamily("lockledger_lock_held", typeGauge, "", "1 while the ledger shows the lock held (by any holder, stale or not), else 0.")
	holders := newFamily("lockledger_lock_holders", typeGauge, "", "How many holders the lock has now (an exclusive holder, or the shared holders of a reader lock or semaphore).")
	stale := newFamily("lockledger_lock_stale", typeGauge, "", "1 while the lock is held but no holder has heartbeated within its TTL (steal it with --force), else 0.")
	info := newFamily("lockledger_lock_holder_info", typeGauge, "", "1 for each holder the lock has now, labelled with who holds it.")
	acq := newFamily("lockledger_acquisitions", typeCounter, "", "Locks acquired (lock_acquired events).")
	steals := newFamily("lockledger_steals", typeCounter, "", "Locks taken over from another holder (lock_stolen events), by reason.")
	rel := newFamily("lockledger_releases", typeCounter, "", "Locks released (lock_released events), by result.")
	lost := newFamily("lockledger_lost_locks", typeCounter, "", "Holders that lost their lock (heartbeat_failed events with lock_lost).")
	hbf := newFamily("lockledger_heartbeat_failures", typeCounter, "", "Heartbeats that failed (heartbeat_failed events).")
	ref := newFamily("lockledger_refusals", typeCounter, "", "Releases, steals and heartbeats the ledger refused (action_refused events), by action.")
	hold := newFamily("lockledger_hold_seconds", typeHistogram, "seconds", "How long holdings lasted, from the acquisition or steal to the release or steal that ended them (as timeline draws them).")
	wait := newFamily("lockledger_wait_seconds", typeHistogram, "seconds", "How long acquirers waited (waited_seconds of lock_acquired, lock_stolen and acquire_blocked; 0 when they did not wait), by what the wait ended in.")

	type nowState struct {
		held, stale bool
		holders     int
	}
	current := map[string]*nowState{}
	seen := map[[5]string]bool{}
	for _, l := range f.holdings.State().Locks() {
		k := label(l.Name)
		c := current[k]
		if c == nil {
			c = &nowState{}
			current[k] = c
		}
		f.stats(l.Name) // every lock named by an event has its counters
		var hs []*holderOf
		if l.Held {
			hs = append(hs, &holderOf{l.Holder, events.ModeExclusive})
		}
		for _, h := range l.Shared {
			hs = append(hs, &holderOf{h, events.ModeShared})
		}
		c.held = c.held || len(hs) > 0
		c.holders += len(hs)
		c.stale = c.stale || l.StateAt(now) == events.StateStale
		for _, h := range hs {
			key := [5]string{k, label(h.h.Record.RequestID), label(h.h.Record.Actor), label(h.h.Record.HostID), h.mode}
			if seen[key] {
				continue
			}
			seen[key] = true
			info.add("", 1, "lock", key[0], "request_id", key[1], "actor", key[2], "host_id", key[3], "mode", key[4])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(f.locks)) {
		s := f.locks[k]
		c := current[k]
		if c == nil {
			c = &nowState{}
		}
		held.add("", b2f(c.held), "lock", k)
		holders.add("", float64(c.holders), "lock", k)
		stale.add("", b2f(c.stale), "lock", k)
		acq.add("_total", float64(s.Acquisitions), "lock", k)
		for _, r := range slices.Sorted(maps.Keys(s.Steals)) {
			steals.add("_total", float64(s.Steals[r]), "lock", k, "reason", r)
		}
		for _, r := range slices.Sorted(maps.Keys(s.Releases)) {
			rel.add("_total", float64(s.Releases[r]), "lock", k, "result", r)
		}
		lost.add("_total", float64(s.Lost), "lock", k)
		hbf.add("_total", float64(s.HeartbeatFailures), "lock", k)
		for _, a := range slices.Sorted(maps.Keys(s.Refusals)) {
			ref.add("_total", float64(s.Refusals[a]), "lock", k, "action", a)
		}
		hold.addHistogram(&s.Hold, "lock", k)
		for i, outcome := range waitOutcomes {
			wait.addHistogram(&s.Wait[i], "lock", k, "outcome", outcome)
		}
	}
	fams := []Family{held, holders, stale, info, acq, steals, rel, lost, hbf, ref, hold, wait}

	evs := newFamily("lockledger_events", typeCounter, "", "Events in the ledger's log (the seq of the last one).")
	evs.add("_total", float64(f.seq))
	fams = append(fams, evs)
	if cp != nil {
		fams = append(fams,
			gauge("lockledger_checkpoint_age_seconds", "seconds", "Seconds since the newest signed checkpoint was made.", max(now.Sub(cp.Created).Seconds(), 0)),
			gauge("lockledger_checkpoint_size", "", "How many events the newest signed checkpoint covers.", float64(cp.Size)))
	}
	if v := f.verify; v != nil {
		fams = append(fams,
			gauge("lockledger_last_verify_success", "", "1 if the last verify of the ledger (its ledger_verified event) found it intact, 0 if it found problems.", b2f(v.OK)),
			gauge("lockledger_last_verify_problems", "", "How many problems the last verify of the ledger found.", float64(v.Problems)),
			gauge("lockledger_last_verify_timestamp_seconds", "seconds", "When the last verify of the ledger was recorded, in seconds since the Unix epoch.", float64(v.At.UnixNano())/1e9))
	}
	return fams
}

// gauge is a family of one unlabelled gauge of value v.
func gauge(name, unit, help string, v float64) Family {
	f := newFamily(name, typeGauge, unit, help)
	f.add("", v)
	return f
}

type holderOf struct {
	h    *replay.Holder
	mode string
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
