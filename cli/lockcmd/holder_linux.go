package lockcmd

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/cli/invocation"
)

// spawnWatcher starts lockledger __watch-holder on pid and does not wait
// for it. The pidfd is opened here, while pid is certainly the holder
// (it cannot exit before lockledger does unless it runs it in the
// background), and handed over.
func spawnWatcher(g *invocation.Globals, lock string, pid int, comm string) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return err
	}
	pidfd := os.NewFile(uintptr(fd), "pidfd")
	defer pidfd.Close()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, "--log-level", g.LogLevel, "--log-format", g.LogFormat, watchCommand,
		"--lock", lock, "--pid", strconv.Itoa(pid), "--comm", comm)
	cmd.Stderr = os.Stderr
	if f, ok := g.IO.ErrOut.(*os.File); ok {
		cmd.Stderr = f
	}
	cmd.ExtraFiles = []*os.File{pidfd} // fd 3
	// Its own session: a Ctrl-C meant for the script does not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	// Not waited for: it outlives this process by design, and init (or
	// the nearest subreaper) reaps it.
	return cmd.Process.Release()
}

// waitPidfd reports whether the process of pidfd exits within d.
func waitPidfd(fd int, d time.Duration) (bool, error) {
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false, nil
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return false, err
		}
		return n > 0, nil
	}
}
