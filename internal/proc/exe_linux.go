package proc

import (
	"os"
	"strconv"
	"strings"
)

// IsLockledger reports whether pid runs this program: the same executable
// as this process, or that executable's file since replaced (an upgrade
// while an older `lockledger run` kept running).
func IsLockledger(pid int) bool {
	self, err := os.Executable()
	if err != nil {
		return false
	}
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		return false
	}
	return exe == self || strings.TrimSuffix(exe, " (deleted)") == self
}

// Comm is pid's command name (/proc/PID/comm), "" when unreadable.
func Comm(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return strings.TrimSpace(string(b))
}

// Args is pid's argument vector (/proc/PID/cmdline), nil when unreadable.
func Args(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}
