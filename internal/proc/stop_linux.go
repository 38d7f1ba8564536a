package proc

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// SignalIf sends sig to pid when still(), checked after pid was pinned with
// a pidfd: the descriptor names that one process for good, so a pid reused
// since the check gets nothing (the signal fails with ESRCH). Kernels before
// 5.3 have no pidfd: there the check and the kill are two steps.
func SignalIf(pid int, sig unix.Signal, still func() bool) {
	if pid <= 0 || pid == os.Getpid() {
		return
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ENOSYS) {
		if still() {
			_ = unix.Kill(pid, sig)
		}
		return
	}
	if err != nil {
		return // gone
	}
	defer unix.Close(fd)
	if still() {
		_ = unix.PidfdSendSignal(fd, sig, nil, 0)
	}
}
