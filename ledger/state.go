package ledger

import (
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/formats"
	"github.com/lockledger/lockledger/internal/proc"
)

// holding is a lock's current holder as the ledger or a foreign file shows it.
type holding struct {
	rec       events.Record
	created   time.Time // full precision for ledger holders
	heartbeat time.Time
	pidStart  string
	bootID    string
	pidNS     *int64 // the PID namespace its pid belongs to; nil where none was recorded
	token     int64
	file      []byte // the lock file bytes that correspond to this holding
	foreign   bool
	corrupt   *UnreadableFile // a foreign file that does not parse: rec is a placeholder
	targets   []events.Target
	// verdict is set for a foreign file in another tool's format: that
	// format's own rules judged it.
	verdict *formats.Verdict
	// target is the path of the foreign target file this holding was read from.
	target string
	// targetFormat is that file's format.
	targetFormat string
	// keptAside is where that file, unreadable, was kept when taken over.
	keptAside string
	// uid is the uid that acquired the holding, once loadAcquirer read it
	// (nil before, and when the live log does not have it).
	uid *int
	// secretSum is the SHA-256 hex of the holding's release secret, once
	// loadAcquirer read it ("" before, and when none was asked for).
	secretSum string
	// recorded: loadAcquirer found the event that gave the holding the
	// lock in the live log; run: that event records its holder as a
	// lockledger run.
	recorded, run bool
}

// judge applies lockledger's state rules (held, stale, dead) to a holder at instant now, with
// --max-age (0: none): a holding older than maxAge (by its creation time)
// counts as stale. job lists the processes of the holder's job that keep
// it from being dead although its own process is gone (see proc.JobProbe).
// A heartbeat (or creation time) further ahead of now than
// formats.MaxClockSkew is not trusted as fresh: stale.
func judge(h *holding, now time.Time, self Host, probe proc.Probe, maxAge time.Duration) (state string, job []int) {
	if h == nil {
		return events.StateFree, nil
	}
	if h.verdict != nil {
		return h.verdict.State, nil
	}
	if h.corrupt != nil {
		return events.StateHeld, nil // fail safe: an unreadable lock is a lock
	}
	var dead bool
	if !h.foreign {
		// Another tool's tower-fleet file is judged by that format's rule:
		// heartbeat expiry only, its pid informational.
		dead, job = gone(h, self, probe)
	}
	switch {
	case dead:
		return events.StateDead, nil
	case now.After(h.rec.StaleAfter(h.heartbeat)):
		return events.StateStale, job
	case formats.Skewed(h.heartbeat, now):
		return events.StateStale, job
	case maxAge > 0 && (now.Sub(h.created) > maxAge || formats.Skewed(h.created, now)):
		return events.StateStale, job
	}
	return events.StateHeld, job
}

// gone reports a holder provably gone (dead), or the processes of its job
// still running here when only its own process is gone. A holder whose pid
// says nothing here (see unprobed) is judged by its TTL only.
func gone(h *holding, self Host, probe proc.Probe) (dead bool, job []int) {
	if why, dead := unprobed(h, self); dead || why != "" {
		return dead, nil
	}
	if !pidGone(h, probe) {
		return false, nil
	}
	job = jobProcesses(h, probe)
	return len(job) == 0, job
}

// unprobed is proc.Unprobed for h from this process; it warns once of another machine under this host id.
func unprobed(h *holding, self Host) (why string, dead bool) {
	why, dead = proc.Unprobed(proc.Holder{Host: h.rec.HostID, PID: h.rec.PID, Boot: h.bootID, PIDNS: h.pidNS, Seen: h.heartbeat},
		proc.Prober{Host: self.ID, Boot: self.BootID, Booted: self.Booted, PIDNS: self.PIDNS, Many: self.peers != nil && self.peers.many})
	if p := self.peers; p != nil && why == proc.UnprobedOtherMachine {
		p.once.Do(func() {
			p.log.Warn("two machines write under one host id: their holders are judged by TTL only; give each its own "+HostIDEnv, "host_id", self.ID, "other_boot", h.bootID, "this_boot", self.BootID)
		})
	}
	return why, dead
}

// pidGone: the holder's process has exited, or its pid now names another
// process.
func pidGone(h *holding, probe proc.Probe) bool {
	live, start := probe.Probe(h.rec.PID)
	return live == proc.Gone || live == proc.Alive && h.pidStart != "" && start != "" && start != h.pidStart
}

// jobProcesses lists the processes of h's job still running on this host
// (see proc.JobProbe): while there are any, a holder whose own process is gone
// is not dead.
func jobProcesses(h *holding, probe proc.Probe) []int {
	jp, ok := probe.(proc.JobProbe)
	if !ok || h.foreign {
		return nil
	}
	return jp.JobProcesses(h.rec.RequestID)
}

// staleSince is the instant the holding became stale; now when it is
// stale only because its heartbeat is too far ahead to trust.
func (h *holding) staleSince(now time.Time) time.Time {
	if formats.Skewed(h.heartbeat, now) {
		return now
	}
	return h.rec.StaleAfter(h.heartbeat)
}
