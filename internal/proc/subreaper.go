package proc

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// ReapExited reaps the children of this process that have exited, other
// than keep (a child another wait is for; 0: none).
func ReapExited(keep int) {
	for _, pid := range childrenOf(os.Getpid()) {
		if pid == keep {
			continue
		}
		var ws unix.WaitStatus
		for {
			_, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
			if !errors.Is(err, unix.EINTR) {
				break
			}
		}
	}
}

// descendantsOf lists the processes below top: its children, theirs, and
// so on.
func descendantsOf(top int) []int {
	var out []int
	seen := map[int]bool{}
	next := childrenOf(top)
	for len(next) > 0 {
		pid := next[0]
		next = next[1:]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		out = append(out, pid)
		next = append(next, childrenOf(pid)...)
	}
	return out
}
