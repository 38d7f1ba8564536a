package proc

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
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

// PokeRunner sends SIGUSR1 to pid if it is a lockledger process (the same
// executable as this one): a `lockledger run` treats it as "check your lock
// now". Any other process is left alone, since SIGUSR1 would kill most.
func PokeRunner(pid int, log interface {
	Debug(msg string, args ...any)
}) {
	if pid <= 0 || pid == os.Getpid() {
		return
	}
	if !IsLockledger(pid) {
		log.Debug("previous holder is not a lockledger process; not signalling it", "pid", pid)
		return
	}
	_ = unix.Kill(pid, unix.SIGUSR1)
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
