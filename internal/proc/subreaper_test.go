//go:build linux

package proc

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"testing"
)

// TestChildrenOfReadsEveryChildOfAThread: one thread's children file
// lists them all, however long it is (1000 children of one thread take
// more than 4 KiB there).
func TestChildrenOfReadsEveryChildOfAThread(t *testing.T) {
	const n = 1000
	done := make(chan []int)
	go func() {
		runtime.LockOSThread() // every fork from one thread: one children file
		defer runtime.UnlockOSThread()
		var pids []int
		for range n {
			c := exec.Command("sleep", "60")
			if err := c.Start(); err != nil {
				break
			}
			t.Cleanup(func() { c.Process.Kill(); c.Wait() })
			pids = append(pids, c.Process.Pid)
		}
		done <- pids
	}()
	pids := <-done
	if len(pids) != n {
		t.Fatalf("started %d of %d children", len(pids), n)
	}
	got := childrenOf(os.Getpid())
	for _, pid := range pids {
		if !slices.Contains(got, pid) {
			t.Fatalf("childrenOf lists %d of the %d children; %d is missing", len(got), n, pid)
		}
	}
}
