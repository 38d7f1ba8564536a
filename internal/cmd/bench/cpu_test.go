package main

import (
	"io"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"
)

// TestChargedCountsTheServersChildrenLiveAndExited: the CPU a server's
// child burns is charged to the server while the child runs (its own
// times) and after it has exited and been reaped (the server's times of
// reaped children), where a server's backends go when they end.
func TestChargedCountsTheServersChildrenLiveAndExited(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/PID/stat is Linux's")
	}
	const burn = 300 * time.Millisecond
	me := os.Getpid()
	before := chargedNow(me)
	if !before.serverOK {
		t.Fatal("this process not found in /proc as the server")
	}
	// This test binary again, burning CPU, then waiting for its stdin to close.
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), burnEnv+"="+burn.String())
	in, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	// What is charged to the server beyond this process's own time (which
	// the server's figure includes: this process is the server here).
	children := func(c charged) time.Duration { return c.minus(before).server - c.minus(before).self }
	deadline := time.Now().Add(30 * time.Second)
	var live charged
	for {
		live = chargedNow(me)
		if children(live) >= burn/2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := children(live); got < burn/2 {
		t.Fatalf("a running child's CPU: %v charged to its parent as server after 30 s; want at least %v", got, burn/2)
	}
	in.Close()
	if err := child.Wait(); err != nil {
		t.Fatal(err)
	}
	cpu := child.ProcessState.UserTime() + child.ProcessState.SystemTime()
	after := chargedNow(me)
	// Each figure of /proc is whole ticks, cut down, and the server's
	// includes this process's own, read there and by rusage: a few ticks
	// apart, where a reaped child left out would be its whole CPU.
	if got := children(after); got < cpu/2 {
		t.Errorf("after the child exited: %v charged to the server; the child used %v", got, cpu)
	}
}

// burnEnv makes the test binary a child that burns CPU for the duration
// it gives (its own CPU clock), then waits for its stdin to close.
const burnEnv = "LOCKLEDGER_BENCH_TEST_BURN"

func burnThenWait(d time.Duration) {
	start := cpuOfSelf()
	for cpuOfSelf()-start < d {
		for i := 0; i < 1e5; i++ {
			sink += i
		}
	}
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

var sink int

func cpuOfSelf() time.Duration { return chargedNow(0).self }
