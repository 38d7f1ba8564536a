package lease

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/proc"
	"github.com/lockledger/lockledger/ledger"
)

// DefaultTakeOverGrace is how long a forced take-over lets the stale
// holder's job act on TERM before it is killed (see StopTakenOver).
const DefaultTakeOverGrace = 10 * time.Second

// TakenOver is what a forced take-over did to the job of the stale holder
// it took the lock from (see StopTakenOver).
type TakenOver struct {
	RequestID string // the stale holder's request; "" when none was taken over on this machine
	// PIDs are the processes stopped: the holder's runner (when it still
	// ran) and its job's; empty when none was left.
	PIDs   []int
	Action string // events.JobTerminated or events.JobKilled; "" when nothing was stopped
	// NotStopped says why the holder and its job were left running; "" when
	// they were stopped or nothing of them was left.
	NotStopped string
}

// StopTakenOver stops the job of the stale holder that a forced take-over
// (a.StopPrevious: reason stale_lock_forced, on this machine and boot)
// took the lock from, and returns once it is gone, so that the taker's own
// job never overlaps it: the job gets TERM and CONT (it may be stopped, as
// a frozen host is), KILL after grace or at once when ctx is done; then the
// holder's `run`, stopped or not, gets KILL (see proc.StopHolder). Its run
// had counted the lock lost at its own deadline, before the TTL, and would
// have stopped the job itself had it not been paused. Every pid is checked
// against the process start time first, and only this user's processes are
// stopped (root's: any under the run). What was stopped is recorded as
// job_processes (terminated or killed) on a's lock by its new holder, and
// a holder left running is recorded as left_running with why: a holder
// that is not a lockledger run (the shell of an acquire), one of another
// user, one that is this process or runs it. On another host or machine,
// lock_stolen's note already says why nothing is stopped.
func StopTakenOver(ctx context.Context, l *ledger.Ledger, a *ledger.Acquisition, grace time.Duration) TakenOver {
	if !a.StopPrevious || a.Previous == nil {
		return TakenOver{}
	}
	prev := a.Previous
	out := TakenOver{RequestID: prev.RequestID}
	runner, start := prev.PID, a.PreviousPIDStart
	if start == "" || !proc.Running(runner, start) {
		runner = 0 // gone, or the pid names another process now: only its job is left
	}
	if runner > 0 {
		out.NotStopped = whyNotStopped(runner)
	}
	if out.NotStopped != "" {
		out.PIDs = []int{runner}
		record(ctx, l, a, events.JobProcessesPayload{JobRequestID: prev.RequestID, PIDs: out.PIDs,
			Action: events.JobLeftRunning, Note: "the stale holder taken over by force is left running: " + out.NotStopped})
		return out
	}
	st := proc.StopHolder(ctx, prev.RequestID, runner, start, grace)
	out.PIDs = st.PIDs
	if st.RunnerKilled {
		out.PIDs = append(slices.Clone(out.PIDs), runner)
		slices.Sort(out.PIDs)
	}
	if len(out.PIDs) == 0 {
		return out
	}
	out.Action = events.JobTerminated
	if st.RunnerKilled || st.Killed {
		out.Action = events.JobKilled
	}
	var note string
	switch {
	case st.RunnerKilled && len(st.PIDs) == 0:
		note = fmt.Sprintf("the stale holder's run (pid %d) was killed before the new holder started", runner)
	case st.RunnerKilled:
		note = fmt.Sprintf("the stale holder's job was stopped (TERM, CONT) and its run (pid %d) killed before the new holder started", runner)
	default:
		note = "the stale holder's job, left without its run, was stopped (TERM, CONT) before the new holder started"
	}
	if st.Killed {
		note += fmt.Sprintf("; still running %s after TERM, the job was killed", grace)
	}
	if st.RunnerLeft {
		l.Logger().Error("the stale holder's run outlived KILL", "lock", a.Lock, "pid", runner)
	}
	record(ctx, l, a, events.JobProcessesPayload{JobRequestID: prev.RequestID, PIDs: out.PIDs, Action: out.Action, Note: note})
	return out
}

// whyNotStopped says why a forced take-over leaves the live holder runner
// alone; "" when it stops it.
func whyNotStopped(runner int) string {
	switch {
	case runner == os.Getpid() || proc.Ancestor(runner):
		return fmt.Sprintf("its process (pid %d) runs the one that took the lock over", runner)
	case !proc.IsLockledger(runner):
		return fmt.Sprintf("its process (pid %d) is not a lockledger run", runner)
	}
	uid, ok := proc.UID(runner)
	if me := os.Getuid(); me != 0 && (!ok || uid != me) {
		return fmt.Sprintf("its process (pid %d) runs as uid %d, not as this user (uid %d)", runner, uid, me)
	}
	return ""
}

// record appends job_processes on a's lock by its holder, whatever became
// of ctx (the processes are stopped: that must be on record).
func record(ctx context.Context, l *ledger.Ledger, a *ledger.Acquisition, p events.JobProcessesPayload) {
	if err := l.RecordJobProcesses(context.WithoutCancel(ctx), a.Lock, a.Identity(), p); err != nil {
		l.Logger().Error("could not record what became of the stale holder's job", "lock", a.Lock, "pids", p.PIDs, "err", err)
	}
}
