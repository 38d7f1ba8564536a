package proc

import (
	"errors"

	"golang.org/x/sys/unix"
)

// Liveness answers whether a process on this host is alive.
type Liveness int

const (
	Alive   Liveness = iota // kill(pid, 0) succeeded or failed with EPERM
	Gone                    // kill(pid, 0) failed with ESRCH
	Unknown                 // could not be determined
)

func (l Liveness) String() string {
	switch l {
	case Alive:
		return "alive"
	case Gone:
		return "gone"
	}
	return "unknown"
}

// LivenessOf maps the result of kill(pid, 0) to a Liveness: nil and EPERM
// mean alive (EPERM: the process exists but is not ours to signal), ESRCH
// means gone, anything else is unknown.
func LivenessOf(err error) Liveness {
	switch {
	case err == nil, errors.Is(err, unix.EPERM):
		return Alive
	case errors.Is(err, unix.ESRCH):
		return Gone
	}
	return Unknown
}

// Check probes pid with kill(pid, 0); pids below 1 are Unknown (kill(0, 0)
// and kill(-1, 0) address process groups, not a process).
func Check(pid int) Liveness {
	if pid <= 0 {
		return Unknown
	}
	return LivenessOf(unix.Kill(pid, 0))
}

// Probe inspects processes on this host.
type Probe interface {
	// Probe reports whether pid is alive, and its start time ("" if unknown).
	Probe(pid int) (Liveness, string)
}

// JobProbe is a Probe that also finds the processes a holder's job left
// running after the holder itself is gone. `lockledger run` gives its
// command LOCKLEDGER_REQUEST_ID, which every process it starts inherits;
// those processes keep the lock held, as a process that inherited an
// flock(2)'d descriptor keeps an flock.
type JobProbe interface {
	JobProcesses(requestID string) []int
}
