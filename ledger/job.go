package ledger

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/events"
)

// A job's processes are found by the LOCKLEDGER_REQUEST_ID they inherited
// (see JobProbe). That finds what left the command's process group (setsid,
// a double fork), but not a process started with a cleared or rewritten
// environment, nor one of another user, whose environment cannot be read.

// jobPoll is how often a wait for a job's processes looks again.
const jobPoll = 50 * time.Millisecond

// killSettle bounds the wait for KILL to take effect: a process in an
// uninterruptible sleep dies only when that sleep ends.
const killSettle = 5 * time.Second

// JobPIDs lists the processes carrying LOCKLEDGER_REQUEST_ID=requestID, from
// a scan of /proc made now, other than this process and its ancestors (a
// lockledger started from inside the job must not stop or await what
// started it).
func JobPIDs(requestID string) []int {
	var pids []int
	for pid := range jobPIDs(requestID) {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	return pids
}

// jobPIDs maps each process carrying one of requestIDs (as JobPIDs finds
// them, from one scan of /proc) to the request id it carries.
func jobPIDs(requestIDs ...string) map[int]string { return jobPIDsAbove(0, requestIDs...) }

// jobPIDsAbove is jobPIDs looking only at pids above floor (see ForkMark).
func jobPIDsAbove(floor int, requestIDs ...string) map[int]string {
	out := map[int]string{}
	var scan map[string][]int
	for _, id := range requestIDs {
		if id == "" {
			continue
		}
		if scan == nil {
			scan = scanJobs(floor)
		}
		for _, pid := range scan[id] {
			out[pid] = id
		}
	}
	if len(out) == 0 {
		return out
	}
	for pid := range ancestors() {
		delete(out, pid)
	}
	return out
}

// ancestors are this process's parent, its parent's parent, and so on.
func ancestors() map[int]bool {
	up := map[int]bool{}
	for pid := os.Getppid(); pid > 1 && !up[pid]; pid = readStat(pid).ppid {
		up[pid] = true
	}
	return up
}

// jobWatch follows the processes of one or more jobs across scans. A
// process stays followed until it has exited: an exiting process loses its
// environment (and drops out of JobPIDs) a moment before it becomes a
// zombie.
type jobWatch struct {
	requestIDs []string
	since      ForkMark       // processes created before it are not looked at
	start      map[int]string // pid -> its start time, when first seen
	job        map[int]string // pid -> the request id it carries
	seen       []int          // in order of first sight
}

func newJobWatch(requestIDs ...string) *jobWatch {
	return &jobWatch{requestIDs: requestIDs, start: map[int]string{}, job: map[int]string{}}
}

// look scans again and returns the jobs' processes still running.
func (w *jobWatch) look() []int {
	found := jobPIDsAbove(w.since.floor(), w.requestIDs...)
	for _, pid := range slices.Sorted(maps.Keys(found)) {
		if _, ok := w.start[pid]; ok {
			continue
		}
		if start := ProcessStart(pid); start != "" {
			w.start[pid], w.job[pid] = start, found[pid]
			w.seen = append(w.seen, pid)
		}
	}
	var live []int
	for _, pid := range w.seen {
		if processRunning(pid, w.start[pid]) {
			live = append(live, pid)
		}
	}
	return live
}

// jobOf is the request id pid was seen carrying.
func (w *jobWatch) jobOf(pid int) string { return w.job[pid] }

// signal sends sig to pid if it is still the process seen.
func (w *jobWatch) signal(pid int, sig unix.Signal) {
	signalIf(pid, sig, func() bool { return processRunning(pid, w.start[pid]) })
}

// all is every process of the job seen so far, sorted.
func (w *jobWatch) all() []int {
	return slices.Sorted(slices.Values(w.seen))
}

// JobStop is what StopJob did.
type JobStop struct {
	PIDs   []int // the processes carrying the job's request id it found, sorted
	Killed bool  // some of them were still running after the grace and got KILL
}

// StopJob ends what is left of a job once its command has exited: the
// command's process group pgid (0: none) and the processes carrying
// requestID (see JobPIDs), which include those that left the group. Each
// gets TERM; whatever still runs after grace (or at once when ctx is done)
// gets KILL. Processes the job starts meanwhile are stopped too. It returns
// when nothing is left, or when KILL has had killSettle to take effect.
func StopJob(ctx context.Context, requestID string, pgid int, grace time.Duration) JobStop {
	return StopJobSince(ctx, requestID, pgid, grace, ForkMark{})
}

// StopJobSince is StopJob for a job whose command was started after since
// was marked: a process created before then cannot carry the job's request
// id, so where the kernel's pids have not wrapped around since, the scans
// read only the environments of processes created after the mark (every
// other one, on a busy host most of /proc, is skipped).
func StopJobSince(ctx context.Context, requestID string, pgid int, grace time.Duration, since ForkMark) JobStop {
	var st JobStop
	w := newJobWatch(requestID)
	w.since = since
	termed := map[int]bool{}
	deadline := time.Now().Add(grace)
	var killing time.Time // when KILL began; zero before
	groupTermed := false
	for {
		live := w.look()
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
		}
		for _, pid := range live {
			switch {
			case !killing.IsZero():
				st.Killed = true
				w.signal(pid, unix.SIGKILL)
			case !termed[pid]:
				termed[pid] = true
				w.signal(pid, unix.SIGTERM)
			}
		}
		if !killing.IsZero() && now.Sub(killing) > killSettle {
			break
		}
		pause(ctx, killing.IsZero())
	}
	st.PIDs = w.all()
	return st
}

// ForkMark is where the kernel's pid allocation stood at one moment: the
// count of forks since boot, then the last pid allocated. Every process
// created after the mark has a pid above that last pid, unless pid
// allocation wrapped past pid_max since, which takes at least as many
// forks as there were pids above it; floor tells which case holds.
type ForkMark struct {
	forks   uint64
	lastPID int
}

// MarkForks marks now; the zero ForkMark (no floor) where /proc does not
// tell. The fork count is read first, so that forks between the two reads
// are counted (which can only make floor more careful).
func MarkForks() ForkMark {
	forks, ok := forkCount()
	if !ok {
		return ForkMark{}
	}
	last, ok := lastPID()
	if !ok {
		return ForkMark{}
	}
	return ForkMark{forks: forks, lastPID: last}
}

// floor is the pid at or below which no process created since m lies
// (0: any pid may be new: no mark, or too many forks since to rule out a
// wrap-around). Forks count threads too, which also take pids.
func (m ForkMark) floor() int {
	if m.lastPID <= 0 {
		return 0
	}
	now, ok := forkCount()
	max := pidMax()
	if !ok || max <= m.lastPID || now < m.forks || now-m.forks >= uint64(max-m.lastPID) {
		return 0
	}
	return m.lastPID
}

// forkCount is the "processes" line of /proc/stat: forks since boot.
func forkCount() (uint64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "processes "); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// lastPID is the last pid allocated in this pid namespace (/proc/loadavg's
// last field).
func lastPID() (int, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 5 {
		return 0, false
	}
	n, err := strconv.Atoi(f[4])
	return n, err == nil && n > 0
}

// pidMax is /proc/sys/kernel/pid_max; 0 where it cannot be read.
var pidMax = sync.OnceValue(func() int {
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return n
})

// pause waits one poll interval; cancellable says ctx may cut it short.
func pause(ctx context.Context, cancellable bool) {
	t := time.NewTimer(jobPoll)
	defer t.Stop()
	if !cancellable {
		<-t.C
		return
	}
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// signalIf sends sig to pid when still(), checked after pid was pinned with
// a pidfd: the descriptor names that one process for good, so a pid reused
// since the check gets nothing (the signal fails with ESRCH). Kernels before
// 5.3 have no pidfd: there the check and the kill are two steps.
func signalIf(pid int, sig unix.Signal, still func() bool) {
	if pid <= 0 || pid == os.Getpid() {
		return
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ENOSYS) {
		if still() {
			_ = unix.Kill(pid, sig)
		}
		return
	}
	if err != nil {
		return // gone
	}
	defer unix.Close(fd)
	if still() {
		_ = unix.PidfdSendSignal(fd, sig, nil, 0)
	}
}

// maxJobPIDs is how many pids one job_processes event lists.
const maxJobPIDs = 4096

// RecordJobProcesses appends job_processes on lock: what was done to the
// processes of job p.JobRequestID that outlived its command or its lock.
// It changes no lock state.
func (l *Ledger) RecordJobProcesses(ctx context.Context, lock string, id Identity, p events.JobProcessesPayload) error {
	if err := events.ValidateLockName(lock); err != nil {
		return err
	}
	if err := events.ValidateRequestID(p.JobRequestID); err != nil {
		return err
	}
	if len(p.PIDs) == 0 {
		return events.Invalid("pids", "", "must name at least one process")
	}
	if len(p.PIDs) > maxJobPIDs {
		p.Note = clip(fmt.Sprintf("%d processes, the first %d listed; ", len(p.PIDs), maxJobPIDs)+p.Note, 1024)
		p.PIDs = p.PIDs[:maxJobPIDs]
	}
	for _, pid := range p.PIDs {
		if pid <= 0 {
			return events.Invalid("pids", strconv.Itoa(pid), "must be positive process ids")
		}
	}
	switch p.Action {
	case events.JobTerminated, events.JobKilled, events.JobLeftRunning:
	default:
		return events.Invalid("action", p.Action, "must be terminated, killed or left_running")
	}
	if err := validText("note", p.Note, 1024, true); err != nil {
		return err
	}
	id, err := l.resolve(id, l.now())
	if err != nil {
		return err
	}
	return l.write(ctx, lock, func(w *writeTx) (error, error) {
		_, err := w.append(events.JobProcesses, id, &p)
		return nil, err
	})
}
