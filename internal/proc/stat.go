package proc

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Stat is what lockledger reads of /proc/PID/stat (on macOS, of sysctl
// kern.proc.pid: see stat_darwin.go).
type Stat struct {
	State string // field 3: R, S, D, Z...; "" when pid cannot be read
	PPID  int    // field 4
	PGRP  int    // field 5, the process group
	Start string // field 22, clock ticks since boot (macOS: see startOf)
	// CPU is the user and system time the process has used (fields 14
	// and 15), ReapedCPU that of its children it has waited for (16 and
	// 17), in clock ticks (USER_HZ, 100 a second on Linux); both 0 on
	// macOS.
	CPU, ReapedCPU int64
}

// parseStat parses a /proc/PID/stat line. The command name (field 2) is in
// parentheses and may hold spaces and parentheses itself, so the fields
// are counted from the last ')'.
func parseStat(s string) Stat {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return Stat{}
	}
	fields := strings.Fields(s[i+1:])
	// fields[0] is field 3 (state); starttime is field 22.
	if len(fields) < 20 {
		return Stat{}
	}
	n := func(i int) int64 { v, _ := strconv.ParseInt(fields[i], 10, 64); return v }
	return Stat{State: fields[0], PPID: int(n(1)), PGRP: int(n(2)), Start: fields[19],
		CPU: n(11) + n(12), ReapedCPU: n(13) + n(14)}
}

// Start returns the start time of pid in clock ticks since boot, or ""
// when it cannot be read. Together with the boot id it tells a live holder
// from a reused pid.
func Start(pid int) string {
	return ReadStat(pid).Start
}

// Running reports whether pid is a process that has not exited (a zombie
// has) and, when start is known, is still the one started then.
func Running(pid int, start string) bool {
	if pid <= 0 {
		return false
	}
	st := ReadStat(pid)
	switch {
	case st.State == "" || st.State == "Z" || st.State == "X":
		return false
	case start != "" && st.Start != start:
		return false // the pid names another process now
	}
	return true
}

// ancestors are this process's parent, its parent's parent, and so on.
func ancestors() map[int]bool {
	up := map[int]bool{}
	for pid := os.Getppid(); pid > 1 && !up[pid]; pid = ReadStat(pid).PPID {
		up[pid] = true
	}
	return up
}

// Orphaned says whether process group pgrp is orphaned: no member has a
// parent in another group of the same session, which is what job control
// needs to stop and continue the group. The kernel discards a SIGTSTP sent
// to an orphaned group, which then nothing would ever continue.
func Orphaned(pgrp int) bool {
	for _, m := range groupMembers(pgrp) {
		sid, err := unix.Getsid(m.pid)
		if err != nil {
			continue
		}
		ppgrp, perr := unix.Getpgid(m.ppid)
		psid, serr := unix.Getsid(m.ppid)
		if perr == nil && serr == nil && ppgrp != pgrp && psid == sid {
			return false
		}
	}
	return true
}

// Group lists the processes of process group pgrp.
func Group(pgrp int) []int {
	var pids []int
	for _, m := range groupMembers(pgrp) {
		pids = append(pids, m.pid)
	}
	return pids
}

// member is a process of a process group, and its parent.
type member struct{ pid, ppid int }
