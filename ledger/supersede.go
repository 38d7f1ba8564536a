package ledger

import (
	"context"
	"fmt"
	"os"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/proc"
	"github.com/lockledger/lockledger/store"
)

// Supersede takes lock req.Lock from its current holder, an older run of
// the same job (GitClaw's cancel-in-progress), recorded as lock_stolen with
// reason superseded. A holder that is a lockledger process on this host is
// poked (SIGUSR1) so that it notices at once and stops its job; the new job
// should start only once that has happened (see lease.Lease.AwaitSuperseded).
func (l *Ledger) Supersede(ctx context.Context, req AcquireRequest) (*Acquisition, error) {
	a, err := l.Steal(ctx, StealRequest{AcquireRequest: req, Supersede: true, Note: "superseded by a newer run"})
	if err != nil {
		return nil, err
	}
	if a.Stolen && a.NotAwaited == "" && a.Previous != nil && a.Previous.HostID == l.host.ID {
		proc.PokeRunner(a.Previous.PID, l.log)
	}
	return a, nil
}

// supersedeNote returns the steal's note, with why the superseded job
// cannot be awaited from here when it cannot, and that reason.
func (l *Ledger) supersedeNote(h *holding, note string) (string, string) {
	var why string
	switch {
	case h.foreign:
		why = "the superseded holder is another tool's lock: it is not told to stop and not awaited"
	case h.rec.HostID != l.host.ID:
		why = "the superseded job runs on host " + h.rec.HostID + ": it cannot be awaited from here"
	case h.rec.PID != os.Getpid() && proc.Running(h.rec.PID, h.pidStart) && !proc.IsLockledger(h.rec.PID):
		why = fmt.Sprintf("the superseded holder (pid %d) is not a lockledger run: it is not told to stop and not awaited", h.rec.PID)
	default:
		return note, ""
	}
	return addNote(note, why), why
}

// AcquisitionEvent is the event by which a request took a lock: a
// lock_acquired, or a lock_stolen, whose acquired part Acquired then is.
type AcquisitionEvent struct {
	Seq      int64
	Acquired *events.Acquired
	Stolen   *events.Stolen // set when the lock was taken by a steal
}

// AcquisitionBefore reads the lock_acquired or lock_stolen event by which
// requestID last took lock before the event at beforeSeq. It returns nil
// when there is none (the request held another tool's lock). A superseding
// run reads it to follow the runs superseded one behind the other.
func (l *Ledger) AcquisitionBefore(ctx context.Context, lock, requestID string, beforeSeq int64) (*AcquisitionEvent, error) {
	seq, body, err := store.TakenBefore(ctx, l.store, lock, requestID, beforeSeq)
	if err != nil || body == nil {
		return nil, err
	}
	_, p, err := events.Decode(body)
	if err != nil {
		return nil, err
	}
	switch p := p.(type) {
	case *events.Acquired:
		return &AcquisitionEvent{Seq: seq, Acquired: p}, nil
	case *events.Stolen:
		return &AcquisitionEvent{Seq: seq, Acquired: &p.Acquired, Stolen: p}, nil
	}
	return nil, nil
}
