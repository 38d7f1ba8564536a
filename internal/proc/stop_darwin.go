package proc

import (
	"os"

	"golang.org/x/sys/unix"
)

// SignalIf sends sig to pid when still() (the caller's check of its start
// time). macOS has no pidfd, so the check and the kill are two steps: a
// process that exits between them, and whose pid is taken at once by a new
// process this user may signal, gets sig. Linux pins the process with a
// pidfd and has no such window.
func SignalIf(pid int, sig unix.Signal, still func() bool) {
	if pid <= 0 || pid == os.Getpid() {
		return
	}
	if still() {
		_ = unix.Kill(pid, sig)
	}
}
