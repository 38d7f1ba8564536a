package proc

import (
	"os"
	"strconv"
	"strings"
	"sync"
)

// ForkMark is where the kernel's pid allocation stood at one moment: the
// count of forks since boot, then the last pid allocated. Every process
// created after the mark has a pid above that last pid, unless pid
// allocation wrapped past pid_max since, which takes at least as many
// forks as there were pids above it; floor tells which case holds.
type ForkMark struct {
	forks   uint64
	lastPID int
}

// MarkForks marks now; the zero ForkMark (no floor) where /proc does not
// tell. The fork count is read first, so that forks between the two reads
// are counted (which can only make floor more careful).
func MarkForks() ForkMark {
	forks, ok := forkCount()
	if !ok {
		return ForkMark{}
	}
	last, ok := lastPID()
	if !ok {
		return ForkMark{}
	}
	return ForkMark{forks: forks, lastPID: last}
}

// floor is the pid at or below which no process created since m lies
// (0: any pid may be new: no mark, or too many forks since to rule out a
// wrap-around). Forks count threads too, which also take pids.
func (m ForkMark) floor() int {
	if m.lastPID <= 0 {
		return 0
	}
	now, ok := forkCount()
	max := pidMax()
	if !ok || max <= m.lastPID || now < m.forks || now-m.forks >= uint64(max-m.lastPID) {
		return 0
	}
	return m.lastPID
}

// forkCount is the "processes" line of /proc/stat: forks since boot.
func forkCount() (uint64, bool) { return procStat("processes") }

// procStat is the number on /proc/stat's line for name.
func procStat(name string) (uint64, bool) {
	b, _ := os.ReadFile("/proc/stat")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// lastPID is the last pid allocated in this pid namespace (/proc/loadavg's
// last field).
func lastPID() (int, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 5 {
		return 0, false
	}
	n, err := strconv.Atoi(f[4])
	return n, err == nil && n > 0
}

// pidMax is /proc/sys/kernel/pid_max; 0 where it cannot be read.
var pidMax = sync.OnceValue(func() int {
	b, _ := os.ReadFile("/proc/sys/kernel/pid_max")
	if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
		return n
	}
	return 0
})
