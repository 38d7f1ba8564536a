package proc

import "golang.org/x/sys/unix"

// ReadStat is what /proc/PID/stat would say of pid, from sysctl
// kern.proc.pid (Start: see startOf); the zero Stat when pid cannot be read.
func ReadStat(pid int) Stat {
	k, ok := kinfo(pid)
	if !ok {
		return Stat{}
	}
	return statOf(k)
}

func statOf(k *unix.KinfoProc) Stat {
	return Stat{State: stateOf(k), PPID: int(k.Eproc.Ppid), PGRP: int(k.Eproc.Pgid), Start: startOf(k)}
}

// Each calls f with the Stat of every process sysctl kern.proc.all lists.
func Each(f func(pid int, s Stat)) {
	ks, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return
	}
	for i := range ks {
		f(int(ks[i].Proc.P_pid), statOf(&ks[i]))
	}
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
