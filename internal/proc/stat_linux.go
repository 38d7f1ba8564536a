package proc

import (
	"os"
	"strconv"
	"strings"
)

// ReadStat reads /proc/PID/stat; the zero Stat when it cannot be read.
func ReadStat(pid int) Stat {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}
	}
	return parseStat(string(b))
}

// groupMembers lists the processes of group pgrp from /proc/PID/stat
// (field 5, the group).
func groupMembers(pgrp int) []member {
	entries, _ := os.ReadDir("/proc")
	var ms []member
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		// fields[1] is the parent (field 4), fields[2] the group (field 5).
		if len(fields) < 3 || fields[2] != strconv.Itoa(pgrp) {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		ms = append(ms, member{pid, ppid})
	}
	return ms
}
