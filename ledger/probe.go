package ledger

import (
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/proc"
)

// Why a holder's pid cannot be probed from here (LockStatus.Unprobed): such
// a holder is never judged dead by its pid; it goes stale by its TTL.
const (
	UnprobedOtherHost    = "other_host"          // another host id
	UnprobedNoProcess    = "no_process"          // pid 0: no process holds it
	UnprobedOtherMachine = "other_machine"       // another machine under this host id
	UnprobedOtherBoot    = "other_boot"          // another boot of a machine not known, on a store many hosts share
	UnprobedOtherPIDNS   = "other_pid_namespace" // another PID namespace, or one not known, on this machine
)

// unprobed says why h's pid names no process this one can probe ("" when
// it does), or that h is provably gone without a probe (dead: a holder of
// an earlier boot of this machine). A holder that may be on another
// machine (another host id or machine key, one seen after this boot began,
// and on a store many hosts share another boot of an unknown machine) is
// never judged by pid or boot (proc.CompareBoot), nor is one no process
// holds (pid 0, AcquireRequest.NoProcess), nor one of another PID namespace
// (samePIDNamespace).
func unprobed(h *holding, self Host) (why string, dead bool) {
	switch {
	case h.rec.HostID != self.ID:
		return UnprobedOtherHost, false
	case h.rec.PID <= 0:
		return UnprobedNoProcess, false
	}
	switch v := proc.CompareBoot(h.bootID, h.heartbeat, self.BootID, self.Booted); v {
	case proc.OtherMachine:
		if p := self.peers; p != nil {
			p.once.Do(func() {
				p.log.Warn("two machines write under one host id: their holders are judged by TTL only; give each its own "+HostIDEnv, "host_id", self.ID, "other_boot", h.bootID, "this_boot", self.BootID)
			})
		}
		return UnprobedOtherMachine, false
	case proc.Rebooted, proc.OtherBoot:
		if v == proc.Rebooted || self.peers == nil || !self.peers.many {
			return "", true
		}
		return UnprobedOtherBoot, false
	}
	if !samePIDNamespace(h, self) {
		return UnprobedOtherPIDNS, false
	}
	return "", false
}

// samePIDNamespace: h's pid names a process in the PID namespace this
// process probes (kill(2) and /proc). A holding recorded before namespaces
// were (nil) is probed as it always was; one recorded in a namespace not
// known (0), or probed from one not known, is not: a pid of another
// namespace names another process, or none, and would make a live holder
// look dead.
func samePIDNamespace(h *holding, self Host) bool {
	if h.pidNS == nil {
		return true
	}
	return self.PIDNS != nil && *h.pidNS != 0 && *h.pidNS == *self.PIDNS
}

// samePIDNS: both unrecorded, or both the same namespace.
func samePIDNS(a, b *int64) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// unprobedOf is LockStatus.Unprobed for a holder in state: "" for none, a
// dead one, another tool's file (its format's rules judge it), and one
// whose pid is probed here.
func (l *Ledger) unprobedOf(h *holding, state string) string {
	if h == nil || h.foreign || h.corrupt != nil || h.verdict != nil || state == events.StateDead || state == events.StateFree {
		return ""
	}
	why, _ := unprobed(h, l.host)
	return why
}
