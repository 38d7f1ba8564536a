package proc

import (
	"os"
	"strconv"
	"strings"
)

// PIDNamespace is the PID namespace this process's pids belong to: the
// inode number of /proc/self/ns/pid ("pid:[4026531836]"). A pid recorded by
// a process of another namespace names another process here, or none. It
// is 0 where that cannot be read, and where this /proc was mounted for
// another namespace (its pids, and /proc/PID/stat's start times, are not
// this process's: /proc/self is not os.Getpid()). Never nil: Linux has
// PID namespaces.
func PIDNamespace() *int64 {
	ns := int64(0)
	if self, err := os.Readlink("/proc/self"); err == nil && self == strconv.Itoa(os.Getpid()) {
		if link, err := os.Readlink("/proc/self/ns/pid"); err == nil {
			ns = parsePIDNamespace(link)
		}
	}
	return &ns
}

// parsePIDNamespace reads the inode of a "pid:[N]" link; 0 for anything else.
func parsePIDNamespace(link string) int64 {
	s, ok := strings.CutPrefix(link, "pid:[")
	n, err := strconv.ParseInt(strings.TrimSuffix(s, "]"), 10, 64)
	if !ok || !strings.HasSuffix(s, "]") || err != nil || n <= 0 {
		return 0
	}
	return n
}
