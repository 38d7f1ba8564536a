package main

import (
	"runtime"
	"syscall"
	"time"

	"github.com/lockledger/lockledger/internal/proc"
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

// chargedNow reads this process's rusage and, for server > 0 on Linux,
// the CPU time of the process server (a postmaster) and of its children,
// live (their own times) and exited (in the postmaster's times of reaped
// children).
func chargedNow(server int) charged {
	var c charged
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		die(err)
	}
	c.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	if server <= 0 || runtime.GOOS != "linux" {
		return c
	}
	var ticks int64
	proc.Each(func(pid int, s proc.Stat) {
		switch {
		case pid == server:
			c.serverOK = true
			ticks += s.CPU + s.ReapedCPU
		case s.PPID == server:
			ticks += s.CPU
		}
	})
	c.server = time.Duration(ticks) * time.Second / ticksPerSecond
	return c
}

func (c charged) minus(o charged) charged {
	return charged{self: c.self - o.self, server: c.server - o.server, serverOK: c.serverOK && o.serverOK}
}

func (c charged) plus(o charged) charged {
	return charged{self: c.self + o.self, server: c.server + o.server, serverOK: c.serverOK || o.serverOK}
}
