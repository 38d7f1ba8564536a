package proc

import "golang.org/x/sys/unix"

// ReadStat is what /proc/PID/stat would say of pid, from sysctl
// kern.proc.pid (Start: see startOf); the zero Stat when pid cannot be read.
func ReadStat(pid int) Stat {
	k, ok := kinfo(pid)
	if !ok {
		return Stat{}
	}
	return Stat{State: stateOf(k), PPID: int(k.Eproc.Ppid), Start: startOf(k)}
}

// groupMembers lists the processes of group pgrp from sysctl
// kern.proc.pgrp.
func groupMembers(pgrp int) []member {
	ks, err := unix.SysctlKinfoProcSlice("kern.proc.pgrp", pgrp)
	if err != nil {
		return nil
	}
	ms := make([]member, 0, len(ks))
	for _, k := range ks {
		ms = append(ms, member{int(k.Proc.P_pid), int(k.Eproc.Ppid)})
	}
	return ms
}
