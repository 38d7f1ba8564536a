package proc

import (
	"context"
	"time"

	"golang.org/x/sys/unix"
)

// HolderStop is what StopHolder did.
type HolderStop struct {
	JobStop           // the job's processes, and whether any needed KILL
	RunnerKilled bool // the runner was still the process started at its start time and got KILL
	RunnerLeft   bool // it still ran KillSettle after KILL (an uninterruptible sleep)
}

// StopHolder ends the job of a lock holder that stopped heartbeating (a
// paused or frozen run) and then its runner: the job first, with TERM and
// CONT to each of its processes (a stopped process acts on TERM only once
// it runs again) and KILL after grace (at once when ctx is done), so that
// it may clean up; then the runner, the process runner started at start
// (0: none left), with KILL, which ends it stopped or not and never lets it
// act on waking. The job is the processes below the runner (it is their
// subreaper, so that includes what left the command's group) and those of
// this user carrying requestID (see JobPIDs). While the runner is stopped
// the job's processes stay its zombies, which count as gone. It returns
// when nothing of either is left, or KILL has had KillSettle to take effect.
func StopHolder(ctx context.Context, requestID string, runner int, start string, grace time.Duration) HolderStop {
	var st HolderStop
	if start == "" {
		runner = 0 // a pid whose start time is unknown may name any process now
	}
	st.JobStop = StopJob(ctx, requestID, 0, grace, Below(runner, start), Continue())
	if runner <= 0 || !Running(runner, start) {
		return st
	}
	st.RunnerKilled = true
	SignalIf(runner, unix.SIGKILL, func() bool { return Running(runner, start) })
	until := time.Now().Add(KillSettle)
	for d := time.Millisecond; Running(runner, start); d = min(2*d, Poll) {
		if time.Now().After(until) {
			st.RunnerLeft = true
			break
		}
		time.Sleep(d)
	}
	return st
}

// Ancestor reports whether pid is this process's parent, its parent's
// parent, and so on.
func Ancestor(pid int) bool { return ancestors()[pid] }
