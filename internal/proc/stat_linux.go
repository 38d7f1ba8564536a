package proc

import (
	"os"
	"strconv"
)

// ReadStat reads /proc/PID/stat; the zero Stat when it cannot be read.
func ReadStat(pid int) Stat {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}
	}
	return parseStat(string(b))
}

// groupMembers lists the processes of group pgrp.
func groupMembers(pgrp int) []member {
	var ms []member
	Each(func(pid int, s Stat) {
		if s.PGRP == pgrp {
			ms = append(ms, member{pid, s.PPID})
		}
	})
	return ms
}

// Each calls f with the Stat of every process whose /proc/PID/stat can be
// read.
func Each(f func(pid int, s Stat)) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if s := ReadStat(pid); s.State != "" {
			f(pid, s)
		}
	}
}
