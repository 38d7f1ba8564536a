package proc

import (
	"os/exec"
	"runtime"
)

// StartLocked starts cmd and waits for it on one OS thread locked to a
// goroutine of its own, and returns a channel that receives cmd.Wait's
// error once it has exited. A Pdeathsig set on cmd is sent when the
// thread that forked it exits, not the process, and the Go runtime ends
// a thread whenever a goroutine locked to it returns without unlocking:
// on any other thread, the child could be signalled at a moment no one
// chose.
func StartLocked(cmd *exec.Cmd) (<-chan error, error) {
	started := make(chan error, 1)
	exited := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return exited, nil
}
