package ledger

import (
	"context"
	"fmt"
	"strconv"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/termtext"
)

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
		p.Note = termtext.Clip(fmt.Sprintf("%d processes, the first %d listed; ", len(p.PIDs), maxJobPIDs)+p.Note, 1024)
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
	if err := events.ValidText("note", p.Note, 1024, true); err != nil {
		return err
	}
	id, err := l.resolve(id, l.now())
	if err != nil {
		return err
	}
	return l.appendOn(ctx, lock, events.JobProcesses, id, &p)
}

// RecordFenceRejected appends fence_rejected on lock: a fence refused id's stale write. No state changes.
func (l *Ledger) RecordFenceRejected(ctx context.Context, lock string, id Identity, p events.FenceRejectedPayload) error {
	p, err := events.CheckFenceRejected(lock, p)
	if err == nil {
		id, err = l.resolve(id, l.now())
	}
	if err != nil {
		return err
	}
	return l.appendOn(ctx, lock, events.FenceRejected, id, &p)
}

// appendOn appends one event of typ on lock, a decision that only records.
func (l *Ledger) appendOn(ctx context.Context, lock string, typ events.Type, id Identity, payload any) error {
	return l.write(ctx, lock, func(w *writeTx) (error, error) {
		_, err := w.append(typ, id, payload)
		return nil, err
	})
}
