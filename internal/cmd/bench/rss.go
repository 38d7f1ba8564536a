package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

var measured = flag.Bool("measured", false, "internal: run the arguments after -- as a command and print its wall time (ns) and peak RSS (KiB)")

// runMeasured runs args and prints its wall time and peak RSS, exiting
// with its status. The bench runs the CLI through it, as a process of its
// own, because a child's ru_maxrss counts the memory of the process that
// started it: Go starts children with vfork (CLONE_VM), and Linux carries
// the parent's high-water RSS into the child's when it execs. Started from
// the bench, every CLI process "peaked" at the bench's own size (over 80
// MiB once it had generated the scale ledger); started from this small
// process, the floor is this process's few MiB.
func runMeasured(args []string) {
	if len(args) == 0 {
		die(errors.New("-measured: no command"))
	}
	c := exec.Command(args[0], args[1:]...)
	c.Stderr = os.Stderr
	s := time.Now()
	err := c.Run()
	took := time.Since(s)
	if c.ProcessState == nil {
		die(err)
	}
	fmt.Printf("%d %d\n", took.Nanoseconds(), c.ProcessState.SysUsage().(*syscall.Rusage).Maxrss)
	os.Exit(c.ProcessState.ExitCode())
}

// measure runs c's command through runMeasured and returns its wall time
// and peak RSS in KiB; c's environment is kept, its Stdout and Stderr are
// the bench's to set.
func measure(c *exec.Cmd) (time.Duration, int64, []byte, error) {
	self, err := os.Executable()
	if err != nil {
		die(err)
	}
	w := exec.Command(self, append([]string{"-measured", "--", c.Path}, c.Args[1:]...)...)
	w.Env = c.Env
	var out, errb bytes.Buffer
	w.Stdout, w.Stderr = &out, &errb
	if err := w.Run(); err != nil {
		return 0, 0, errb.Bytes(), err
	}
	var ns, rss int64
	if _, err := fmt.Sscan(out.String(), &ns, &rss); err != nil {
		return 0, 0, errb.Bytes(), fmt.Errorf("-measured printed %q: %w", out.String(), err)
	}
	return time.Duration(ns), rss, errb.Bytes(), nil
}
