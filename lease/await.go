package lease

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/proc"
	"github.com/lockledger/lockledger/ledger"
)

// SupersedeNoticeMargin is how long past its own kill grace a superseding
// run waits for the job it superseded: the time that job's runner takes to
// notice (one heartbeat through a possibly busy ledger) before it starts
// stopping its job.
const SupersedeNoticeMargin = 3 * time.Second

// Superseded is what became of the job a lease took the lock from.
type Superseded struct {
	RequestID string // the superseded request; "" when none was
	// NotAwaited says why its processes could not be watched from here
	// (another host, another tool's lock, a holder that is not a lockledger
	// run); "" when they were awaited.
	NotAwaited string
	// Earlier are the requests RequestID had itself superseded, directly or
	// through others, that were awaited too (see AwaitSuperseded), newest first.
	Earlier []string
	// Killed lists the processes killed because they outlived the grace
	// (recorded as job_processes, action killed, one event per request).
	Killed []int
}

// AwaitSuperseded returns once the job this lease took the lock from (with
// WithSupersede) has stopped: its runner's process has exited (or its pid
// names another process now) and no process carries its request id (see
// proc.JobPIDs). Its runner was poked and stops its job within its own
// kill grace; once that runner is gone, what is left of the job gets TERM
// from here, since nobody else will stop it. When that job's run had itself
// superseded another one and was still waiting for it, that older job is
// awaited the same way, and so on back (see supersededChain). After grace
// plus SupersedeNoticeMargin, what is left (the jobs' processes, and their
// runners) is killed and recorded as job_processes on the lease's lock, by
// its holder. A job on another host, or held through another tool's lock or
// by a process that is not a lockledger run, cannot be awaited: NotAwaited
// says so. A lease that superseded nobody returns at once.
//
// It fails when ctx is done. A lease lost meanwhile (this run superseded in
// turn) keeps waiting, and killing after the grace, all the same: the run
// that took the lock may not be able to await these jobs; the loss is
// returned once they have stopped.
func (s *Lease) AwaitSuperseded(ctx context.Context, grace time.Duration) (Superseded, error) {
	sup, err := awaitSuperseded(ctx, s.l, s.acq, grace)
	if err != nil {
		return sup, err
	}
	return sup, s.Err()
}

// maxSupersededChain bounds how many superseded runs, one behind the other,
// AwaitSuperseded follows back.
const maxSupersededChain = 16

// supersededJob is one job a superseding acquisition waits for.
type supersededJob struct {
	requestID string
	runner    int    // its runner's pid; 0 when there is none to await
	start     string // the runner's start time; "" when not recorded
}

// supersededChain lists the jobs acquisition a must wait for: the holder it
// took the lock from and, when that holder had itself taken the lock with
// reason superseded, the holder before it, and so on back (at most
// maxSupersededChain). A run superseded while it still waits for its own
// predecessor never started its command, but that predecessor may still be
// running, and nothing else keeps the newest job from overlapping it. A job
// on another host, or held by a process that is not a lockledger run,
// cannot be awaited and is left out (the immediate one as a.NotAwaited says).
func supersededChain(ctx context.Context, l *ledger.Ledger, a *ledger.Acquisition) []supersededJob {
	var chain []supersededJob
	host := l.Host().ID
	prev, start, before := *a.Previous, a.PreviousPIDStart, a.Seq
	for i := 0; i < maxSupersededChain; i++ {
		ev, err := l.AcquisitionBefore(ctx, a.Lock, prev.RequestID, before)
		if err != nil {
			l.Logger().Warn("could not read the runs the superseded one had superseded; awaiting only those found",
				"lock", a.Lock, "request_id", prev.RequestID, "err", err)
		}
		if ev == nil {
			ev = &ledger.AcquisitionEvent{} // none, or unreadable: not awaitable, and the chain ends here
		}
		if start == "" && ev.Acquired != nil {
			start = ev.Acquired.PIDStart
		}
		awaitable := ev.Acquired != nil && prev.HostID == host &&
			!(prev.PID != os.Getpid() && proc.Running(prev.PID, start) && !proc.IsLockledger(prev.PID))
		if i == 0 {
			awaitable = a.NotAwaited == ""
		}
		if awaitable {
			j := supersededJob{requestID: prev.RequestID, runner: prev.PID, start: start}
			if j.runner == os.Getpid() {
				j.runner = 0 // this process superseded itself: nothing to wait for
			}
			chain = append(chain, j)
		}
		if ev.Stolen == nil || ev.Stolen.Reason != events.ReasonSuperseded {
			break
		}
		prev, start, before = ev.Stolen.PreviousLock, "", ev.Seq
	}
	return chain
}

// awaitSuperseded waits for the jobs acquisition a superseded (see
// Lease.AwaitSuperseded); it fails only when ctx is done. It does not look
// at whether a's holder still holds the lock: a holder superseded in turn
// meanwhile must still wait, since the run that took the lock from it may
// not be able to await these jobs.
func awaitSuperseded(ctx context.Context, l *ledger.Ledger, a *ledger.Acquisition, grace time.Duration) (Superseded, error) {
	if !a.Stolen || a.Previous == nil {
		return Superseded{}, nil
	}
	out := Superseded{RequestID: a.Previous.RequestID, NotAwaited: a.NotAwaited}
	chain := supersededChain(ctx, l, a)
	ids := make([]string, 0, len(chain))
	for _, j := range chain {
		ids = append(ids, j.requestID)
		if j.requestID != out.RequestID {
			out.Earlier = append(out.Earlier, j.requestID)
		}
	}
	if len(chain) == 0 {
		return out, nil
	}
	deadline := time.Now().Add(grace + SupersedeNoticeMargin)
	watch := proc.NewWatch(ids...)
	termed := map[int]bool{}
	for {
		live := watch.Look()
		runners := map[string]bool{} // request id -> its runner still runs
		for _, j := range chain {
			if runnerRunning(j.runner, j.start) {
				runners[j.requestID] = true
			}
		}
		if len(live) == 0 && len(runners) == 0 {
			return out, nil
		}
		for _, pid := range live {
			// A job whose runner is gone has nobody else to stop it.
			if !runners[watch.JobOf(pid)] && !termed[pid] {
				termed[pid] = true
				watch.Signal(pid, unix.SIGTERM)
			}
		}
		if time.Now().After(deadline) {
			break
		}
		proc.Pause(ctx, true)
		if err := ctx.Err(); err != nil {
			return out, err
		}
	}
	killed := killJobs(chain, watch)
	for _, j := range chain {
		pids := killed[j.requestID]
		if len(pids) == 0 {
			continue // it ended between the last look and the KILL
		}
		out.Killed = append(out.Killed, pids...)
		note := fmt.Sprintf("the superseded job outlived the grace (%s, and %s for its runner to notice) and was killed",
			grace, SupersedeNoticeMargin)
		if j.requestID != out.RequestID {
			note = fmt.Sprintf("a job superseded before %s, which was still waiting for it to stop, outlived the grace (%s, and %s for its runner to notice) and was killed",
				out.RequestID, grace, SupersedeNoticeMargin)
		}
		if err := l.RecordJobProcesses(context.WithoutCancel(ctx), a.Lock, a.Identity(), events.JobProcessesPayload{
			JobRequestID: j.requestID, PIDs: pids, Action: events.JobKilled, Note: note}); err != nil {
			l.Logger().Error("could not record the killed job processes", "lock", a.Lock, "pids", pids, "err", err)
		}
	}
	slices.Sort(out.Killed)
	return out, nil
}

// killJobs KILLs the jobs' runners (each if still the process started at
// its start) and their processes, until none is left or proc.KillSettle has
// passed, and returns those it killed by request id, sorted.
func killJobs(chain []supersededJob, watch *proc.Watch) map[string][]int {
	killed := map[string][]int{}
	seen := map[int]bool{}
	add := func(id string, pid int) {
		if !seen[pid] {
			seen[pid] = true
			killed[id] = append(killed[id], pid)
		}
	}
	until := time.Now().Add(proc.KillSettle)
	for {
		live := watch.Look()
		up := slices.DeleteFunc(slices.Clone(chain), func(j supersededJob) bool { return !runnerRunning(j.runner, j.start) })
		if (len(up) == 0 && len(live) == 0) || time.Now().After(until) {
			break
		}
		for _, j := range up {
			add(j.requestID, j.runner)
			proc.SignalIf(j.runner, unix.SIGKILL, func() bool { return runnerRunning(j.runner, j.start) })
		}
		for _, pid := range live {
			add(watch.JobOf(pid), pid)
			watch.Signal(pid, unix.SIGKILL)
		}
		proc.Pause(context.Background(), false)
	}
	for _, pids := range killed {
		slices.Sort(pids)
	}
	return killed
}

// runnerRunning reports whether a superseded runner still runs: its pid
// names the process started at start or, when that start time was not
// recorded, some lockledger process.
func runnerRunning(pid int, start string) bool {
	return proc.Running(pid, start) && (start != "" || proc.IsLockledger(pid))
}
