package ledger

import (
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/formats"
)

// holding is a lock's current holder as the ledger or a foreign file shows it.
type holding struct {
	rec       events.Record
	created   time.Time // full precision for ledger holders
	heartbeat time.Time
	pidStart  string
	bootID    string
	token     int64
	file      []byte // the lock file bytes that correspond to this holding
	foreign   bool
	corrupt   bool
	targets   []events.Target
	// verdict is set for a foreign file in another tool's format: that
	// format's own rules judged it.
	verdict *formats.Verdict
	// target is the path of the foreign target file this holding was read from.
	target string
}

// judge applies DESIGN.md's state rules to a holder at instant now.
func judge(h *holding, now time.Time, self Host, probe ProcessProbe) string {
	return judgeAge(h, now, self, probe, 0)
}

// judgeAge is judge with --max-age: a holding older than maxAge (by its
// creation time) counts as stale.
func judgeAge(h *holding, now time.Time, self Host, probe ProcessProbe, maxAge time.Duration) string {
	if h == nil {
		return events.StateFree
	}
	if h.verdict != nil {
		return h.verdict.State
	}
	if h.corrupt {
		return events.StateHeld // fail safe: an unreadable lock is a lock
	}
	if dead(h, self, probe) {
		return events.StateDead
	}
	if now.Sub(h.heartbeat) > time.Duration(h.rec.TTLSeconds)*time.Second {
		return events.StateStale
	}
	if maxAge > 0 && now.Sub(h.created) > maxAge {
		return events.StateStale
	}
	return events.StateHeld
}

// dead reports a holder provably gone. A holder on another host is never
// judged by pid.
func dead(h *holding, self Host, probe ProcessProbe) bool {
	if h.rec.HostID != self.ID || h.rec.PID <= 0 {
		return false
	}
	if h.bootID != "" && self.BootID != "" && h.bootID != self.BootID {
		return true // the host rebooted since the lock was taken
	}
	return pidGone(h, probe) && len(jobProcesses(h, probe)) == 0
}

// pidGone: the holder's process has exited, or its pid now names another
// process.
func pidGone(h *holding, probe ProcessProbe) bool {
	live, start := probe.Probe(h.rec.PID)
	return live == Gone || live == Alive && h.pidStart != "" && start != "" && start != h.pidStart
}

// jobProcesses lists the processes of h's job still running on this host
// (see JobProbe): while there are any, a holder whose own process is gone
// is not dead.
func jobProcesses(h *holding, probe ProcessProbe) []int {
	jp, ok := probe.(JobProbe)
	if !ok || h.foreign {
		return nil
	}
	return jp.JobProcesses(h.rec.RequestID)
}

// orphans is jobProcesses for a holder on this host whose own process is
// gone, to say why such a lock is still held.
func orphans(h *holding, self Host, probe ProcessProbe) []int {
	if h == nil || h.rec.HostID != self.ID || h.rec.PID <= 0 || !pidGone(h, probe) {
		return nil
	}
	return jobProcesses(h, probe)
}

// staleSince is the instant the holding became stale.
func (h *holding) staleSince() time.Time {
	return h.heartbeat.Add(time.Duration(h.rec.TTLSeconds) * time.Second)
}
