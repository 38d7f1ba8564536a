package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// ticksPerSecond is the unit of /proc/PID/stat's CPU times (USER_HZ),
// which Linux fixes at 100 for every program it shows them to.
const ticksPerSecond = 100

// charged is CPU time the kernel has charged so far: to this process
// (the clients, and SQLite, which runs in it), and to the database
// server's processes, where there is one of ours (serverOK).
type charged struct {
	self, server time.Duration
	serverOK     bool
}

// chargedNow reads this process's rusage and, for server > 0, the CPU
// time of the process server (a postmaster) and of its children, live
// (their own times) and exited (in the postmaster's times of reaped
// children).
func chargedNow(server int) charged {
	var c charged
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		die(err)
	}
	c.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	if server <= 0 {
		return c
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var ticks int64
	for _, p := range stats {
		f, ok := statFields(p)
		if !ok {
			continue
		}
		pid, _ := strconv.Atoi(f[0])
		ppid, _ := strconv.Atoi(f[3])
		switch {
		case pid == server:
			c.serverOK = true
			ticks += sumFields(f[13:17]) // utime, stime, cutime, cstime
		case ppid == server:
			ticks += sumFields(f[13:15]) // utime, stime
		}
	}
	c.server = time.Duration(ticks) * time.Second / ticksPerSecond
	return c
}

// statFields splits a /proc/PID/stat into its fields, the command's name
// (in parentheses, which may hold spaces) as one.
func statFields(path string) ([]string, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return nil, false
	}
	f := append([]string{string(bytes.TrimSpace(b[:open])), string(b[open+1 : end])}, stringsOf(bytes.Fields(b[end+1:]))...)
	return f, len(f) > 17
}

func stringsOf(bs [][]byte) []string {
	s := make([]string, len(bs))
	for i, b := range bs {
		s[i] = string(b)
	}
	return s
}

func sumFields(fs []string) int64 {
	var n int64
	for _, f := range fs {
		v, _ := strconv.ParseInt(f, 10, 64)
		n += v
	}
	return n
}

func (c charged) minus(o charged) charged {
	return charged{self: c.self - o.self, server: c.server - o.server, serverOK: c.serverOK && o.serverOK}
}

func (c charged) plus(o charged) charged {
	return charged{self: c.self + o.self, server: c.server + o.server, serverOK: c.serverOK || o.serverOK}
}
