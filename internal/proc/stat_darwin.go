package proc

// ReadStat is what /proc/PID/stat would say of pid, from sysctl
// kern.proc.pid (Start: see startOf); the zero Stat when pid cannot be read.
func ReadStat(pid int) Stat {
	k, ok := kinfo(pid)
	if !ok {
		return Stat{}
	}
	return Stat{State: stateOf(k), PPID: int(k.Eproc.Ppid), Start: startOf(k)}
}
