//go:build unix

package formats

import "syscall"

// KillProbe probes a local pid with kill(pid, 0); pids below 1 are Unknown
// (kill(0, 0) and kill(-1, 0) address process groups, not a process).
func KillProbe(pid int) Liveness {
	if pid <= 0 {
		return Unknown
	}
	return LivenessOf(syscall.Kill(pid, 0))
}
