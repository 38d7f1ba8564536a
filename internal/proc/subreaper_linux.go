package proc

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// BecomeSubreaper makes this process the child subreaper of what it starts
// (PR_SET_CHILD_SUBREAPER): a descendant orphaned by its parent's exit (a
// double fork, a daemon started with setsid) is reparented to it rather
// than to init, and so stays one of its descendants whatever its
// environment (see Descendants). A subreaper must reap what it inherits
// (see ReapExited).
func BecomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// childrenOf lists pid's children from /proc/PID/task/TID/children (one
// file per thread: a child is its parent thread's); where the kernel has
// no such files, from the parent field of every /proc/PID/stat. The task
// directory is listed once and each file read whole into one buffer
// (readWhole): this runs on every SIGCHLD of a run.
func childrenOf(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tids, err := readNames(dir)
	if err != nil {
		return nil
	}
	var out []int
	buf := make([]byte, 4096)
	found := false
	for _, tid := range tids {
		var b []byte
		if b, buf = readWhole(dir+tid+"/children", buf); b == nil {
			continue
		}
		found = true
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	if !found {
		return childrenByStat(pid)
	}
	return out
}

// readNames lists a directory's names.
func readNames(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}

// childrenByStat is childrenOf from a scan of every /proc/PID/stat.
func childrenByStat(parent int) []int {
	names, _ := readNames("/proc")
	var out []int
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err == nil && ReadStat(pid).PPID == parent {
			out = append(out, pid)
		}
	}
	return out
}
