package proc

import (
	"errors"

	"golang.org/x/sys/unix"
)

// pidfdSignal sends sig to pid when still(), checked after pid was pinned
// with a pidfd: the descriptor names that one process for good, so a pid
// reused since the check gets nothing (the signal fails with ESRCH). It
// reports false on kernels before 5.3, which have no pidfd.
func pidfdSignal(pid int, sig unix.Signal, still func() bool) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ENOSYS) {
		return false
	}
	if err != nil {
		return true // gone
	}
	defer unix.Close(fd)
	if still() {
		_ = unix.PidfdSendSignal(fd, sig, nil, 0)
	}
	return true
}
