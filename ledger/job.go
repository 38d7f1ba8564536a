package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
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
// a scan of /proc made now, other than this process.
func JobPIDs(requestID string) []int {
	if requestID == "" {
		return nil
	}
	return scanJobs()[requestID]
}

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

// hasJobEnv reports whether pid's environment carries requestID.
func hasJobEnv(pid int, requestID string) bool {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	want := []byte(JobEnv + "=" + requestID)
	for kv := range bytes.SplitSeq(env, []byte{0}) {
		if bytes.HasPrefix(kv, []byte(JobEnv+"=")) {
			return bytes.Equal(kv, want) // the first one is the one getenv sees
		}
	}
	return false
}

// signalJobProcess sends sig to pid if it still carries requestID.
func signalJobProcess(pid int, requestID string, sig unix.Signal) {
	signalIf(pid, sig, func() bool { return hasJobEnv(pid, requestID) })
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
