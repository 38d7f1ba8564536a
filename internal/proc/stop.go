package proc

import (
	"context"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/internal/backoff"
)

// Poll is how often a wait for a job's processes looks again.
const Poll = 50 * time.Millisecond

// KillSettle bounds the wait for KILL to take effect: a process in an
// uninterruptible sleep dies only when that sleep ends.
const KillSettle = 5 * time.Second

// JobStop is what StopJob did.
type JobStop struct {
	PIDs   []int // the job's processes it found, sorted
	Killed bool  // some of them were still running after the grace and got KILL
}

// StopOption adjusts StopJob.
type StopOption func(*Watch)

// Since says the job's command was started after mark was made: a process
// created before then cannot carry the job's request id, so where the
// kernel's pids have not wrapped around since, the scans read only the
// environments of processes created after the mark (every other one, on a
// busy host most of /proc, is skipped).
func Since(mark ForkMark) StopOption {
	return func(w *Watch) { w.since = mark }
}

// Descendants counts every process below this one as the job's, whatever
// its environment, and reaps those that exit. It is for a subreaper (see
// BecomeSubreaper) whose only child was the job's command, now waited for:
// what is below it then is what the job left running.
func Descendants() StopOption {
	return func(w *Watch) { w.below = true }
}

// BelowOnly is Descendants without the scan for the request id: for a
// subreaper whose command has been waited for, what the command left
// running is below it whatever became of its parents (an orphan comes back
// to it), so no other process's environment is read. A process carrying
// the request id that is not below it (started through another process's
// service) is not the job's.
func BelowOnly() StopOption {
	return func(w *Watch) { w.below, w.belowOnly = true, true }
}

// Below counts every process below pid as the job's, whatever its
// environment, while pid is the process started at start: for another
// run, the subreaper of what its command started (see BecomeSubreaper).
// A start time is required: a pid that names another process now has
// nothing of the job below it.
func Below(pid int, start string) StopOption {
	return func(w *Watch) {
		if start != "" {
			w.under, w.underStart = pid, start
		}
	}
}

// Continue sends CONT after each TERM: a stopped process (SIGSTOP, a
// frozen cgroup's thaw aside) acts on TERM only once it runs again, while
// KILL ends it stopped or not.
func Continue() StopOption {
	return func(w *Watch) { w.cont = true }
}

// StopJob ends what is left of a job once its command has exited: the
// command's process group pgid (0: none) and the processes carrying
// requestID (see JobPIDs), which include those that left the group. Each
// gets TERM; whatever still runs after grace (or at once when ctx is done)
// gets KILL. Processes the job starts meanwhile are stopped too. It returns
// when nothing is left, or when KILL has had KillSettle to take effect.
func StopJob(ctx context.Context, requestID string, pgid int, grace time.Duration, opts ...StopOption) JobStop {
	var st JobStop
	w := NewWatch(requestID)
	for _, o := range opts {
		o(w)
	}
	termed := map[int]bool{}
	deadline := time.Now().Add(grace)
	var killing time.Time // when KILL began; zero before
	groupTermed := false
	for {
		live := w.Look()
		group := pgid > 0 && unix.Kill(-pgid, 0) == nil
		if len(live) == 0 && !group {
			break
		}
		now := time.Now()
		if killing.IsZero() && (now.After(deadline) || ctx.Err() != nil) {
			killing = now
		}
		switch {
		case group && !killing.IsZero():
			_ = unix.Kill(-pgid, unix.SIGKILL)
		case group && !groupTermed:
			groupTermed = true
			_ = unix.Kill(-pgid, unix.SIGTERM)
			if w.cont {
				_ = unix.Kill(-pgid, unix.SIGCONT)
			}
		}
		for _, pid := range live {
			switch {
			case !killing.IsZero():
				st.Killed = true
				w.Signal(pid, unix.SIGKILL)
			case !termed[pid]:
				termed[pid] = true
				w.Signal(pid, unix.SIGTERM)
				if w.cont {
					w.Signal(pid, unix.SIGCONT)
				}
			}
		}
		if !killing.IsZero() && now.Sub(killing) > KillSettle {
			break
		}
		Pause(ctx, killing.IsZero())
	}
	st.PIDs = w.All()
	return st
}

// SignalIf sends sig to pid when still() (the caller's check of its start
// time), with the process pinned where the system can (pidfdSignal); where
// it cannot, the check and the kill are two steps.
func SignalIf(pid int, sig unix.Signal, still func() bool) {
	if pid <= 0 || pid == os.Getpid() || pidfdSignal(pid, sig, still) {
		return
	}
	if still() {
		_ = unix.Kill(pid, sig)
	}
}

// Pause waits one Poll interval; cancellable says ctx may cut it short.
func Pause(ctx context.Context, cancellable bool) {
	if !cancellable {
		ctx = context.Background()
	}
	_ = backoff.Sleep(ctx, Poll)
}
