package proc

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
)

func TestParseStat(t *testing.T) {
	tail := " 0 -1 4194304 100 0 0 0 1 2 0 0 20 0 1 0 98765 1234 56"
	if got := parseStat("9 (sh) S 1 9 9 0 -1 0 0 0 0 0 7 5 30 12 20 0 1 0 555 0 0"); got.CPU != 12 || got.ReapedCPU != 42 {
		t.Errorf("CPU %d, ReapedCPU %d; want 12 and 42", got.CPU, got.ReapedCPU)
	}
	for _, c := range []struct {
		line string
		want Stat
	}{
		{"123 (sleep) S 45 123 45" + tail, Stat{State: "S", PPID: 45, PGRP: 123, Start: "98765", CPU: 3}},
		{"123 (a) b (c) Z 7 123 45" + tail, Stat{State: "Z", PPID: 7, PGRP: 123, Start: "98765", CPU: 3}},
		{"123 (x y) R 1 1 1" + tail, Stat{State: "R", PPID: 1, PGRP: 1, Start: "98765", CPU: 3}},
		{"123 (sleep) S 45", Stat{}},
		{"garbage", Stat{}},
		{"", Stat{}},
	} {
		if got := parseStat(c.line); got != c.want {
			t.Errorf("parseStat(%q) = %+v, want %+v", c.line, got, c.want)
		}
	}
}

func TestReadStatAndRunning(t *testing.T) {
	c := exec.Command("sleep", "30")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Process.Kill(); _ = c.Wait() }()
	pid := c.Process.Pid
	st := ReadStat(pid)
	if st.PPID != os.Getpid() || st.Start == "" || st.State == "" {
		t.Fatalf("ReadStat(child) = %+v, want this process as parent and a start time", st)
	}
	if !Running(pid, st.Start) || !Running(pid, "") {
		t.Fatalf("Running(live child) = false")
	}
	if Running(pid, st.Start+"1") {
		t.Fatalf("Running(child, another start time) = true: the pid names another process")
	}
	_ = c.Process.Kill()
	_, _ = c.Process.Wait()
	if Running(pid, st.Start) {
		t.Fatalf("Running(reaped child) = true")
	}
	if got := ReadStat(-1); got != (Stat{}) {
		t.Fatalf("ReadStat(-1) = %+v", got)
	}
	if up := ancestors(); !up[os.Getppid()] || up[os.Getpid()] {
		t.Fatalf("ancestors() = %v, want the parent %d and not this process", up, os.Getppid())
	}
}

// A group whose member's parent is in another group of the same session
// is not orphaned: job control can stop and continue it. A new session's
// group, whose only member's parent is in another session, is.
func TestOrphaned(t *testing.T) {
	for _, c := range []struct {
		name     string
		attr     *syscall.SysProcAttr
		orphaned bool
	}{
		{"a group of its own", &syscall.SysProcAttr{Setpgid: true}, false},
		{"a session of its own", &syscall.SysProcAttr{Setsid: true}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command("sleep", "60")
			cmd.SysProcAttr = c.attr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			if got := Orphaned(cmd.Process.Pid); got != c.orphaned {
				t.Fatalf("Orphaned = %v, want %v", got, c.orphaned)
			}
		})
	}
}
