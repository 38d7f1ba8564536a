package proc

import "time"

// Why a holder's pid cannot be probed from here: such a holder is never
// judged dead by its pid; it goes stale by its TTL.
const (
	UnprobedOtherHost    = "other_host"          // another host id
	UnprobedNoProcess    = "no_process"          // pid 0: no process holds it
	UnprobedOtherMachine = "other_machine"       // another machine under this host id
	UnprobedOtherBoot    = "other_boot"          // another boot of a machine not known, on a store many hosts share
	UnprobedOtherPIDNS   = "other_pid_namespace" // another PID namespace, or one not known, on this machine
)

// Holder is what a holding recorded of its process: host id, pid, boot
// (JoinBoot's form), PID namespace (nil: not recorded), and when it was
// last seen (its last heartbeat).
type Holder struct {
	Host  string
	PID   int
	Boot  string
	PIDNS *int64
	Seen  time.Time
}

// Prober is this process as it probes: host id, boot (JoinBoot's form)
// and when it began, PID namespace (PIDNamespace), and whether the store
// is shared by many hosts.
type Prober struct {
	Host   string
	Boot   string
	Booted time.Time
	PIDNS  *int64
	Many   bool
}

// Unprobed says why h's pid names no process p can probe ("" when it
// does), or that h is provably gone without a probe (dead: a holder of an
// earlier boot of this machine). A holder that may be on another machine
// (another host id or machine key, one seen after this boot began, and on a
// store many hosts share another boot of an unknown machine) is never
// judged by pid or boot (CompareBoot), nor is one no process holds (pid 0),
// nor one of another PID namespace (SamePIDNamespace).
func Unprobed(h Holder, p Prober) (why string, dead bool) {
	switch {
	case h.Host != p.Host:
		return UnprobedOtherHost, false
	case h.PID <= 0:
		return UnprobedNoProcess, false
	}
	switch v := CompareBoot(h.Boot, h.Seen, p.Boot, p.Booted); v {
	case OtherMachine:
		return UnprobedOtherMachine, false
	case Rebooted, OtherBoot:
		if v == Rebooted || !p.Many {
			return "", true
		}
		return UnprobedOtherBoot, false
	}
	if !SamePIDNamespace(h.PIDNS, p.PIDNS) {
		return UnprobedOtherPIDNS, false
	}
	return "", false
}

// SamePIDNamespace: a pid recorded in namespace recorded names a process in
// self, the namespace this process probes (kill(2) and /proc). One recorded
// before namespaces were (nil) is probed as it always was; one recorded in
// a namespace not known (0), or probed from one not known, is not: a pid of
// another namespace names another process, or none, and would make a live
// holder look dead.
func SamePIDNamespace(recorded, self *int64) bool {
	if recorded == nil {
		return true
	}
	return self != nil && *recorded != 0 && *recorded == *self
}
