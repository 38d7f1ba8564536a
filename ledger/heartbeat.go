package ledger

import (
	"bytes"
	"cmp"
	"context"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/replay"
)

// Heartbeat renews a lock held by id.RequestID. A heartbeat by a request
// that held the lock and had it taken away records heartbeat_failed with
// lock_lost and returns a *NotHolderError wrapping ErrLost; one by a request
// that never held it, or released it itself, is a mistake of the caller,
// not a loss: recorded as action_refused, a *NotHolderError wrapping
// ErrNotHolder.
func (l *Ledger) Heartbeat(ctx context.Context, lock string, id Identity) (*Acquisition, error) {
	return l.heartbeat(ctx, lock, id, 0, 0)
}

// heartbeat renews; priorFailures counts the caller's failed attempts just
// before this one, recorded if this one finds the lock lost. A non-zero
// token renews only the holding with that fencing token: a lease whose
// request id was reclaimed by another process has lost its lock.
func (l *Ledger) heartbeat(ctx context.Context, lock string, id Identity, priorFailures int, token int64) (*Acquisition, error) {
	if err := events.ValidateLockName(lock); err != nil {
		return nil, err
	}
	if id.RequestID == "" {
		return nil, events.Invalid("request id", "", "is required to heartbeat")
	}
	id, err := l.resolve(id, l.now())
	if err != nil {
		return nil, err
	}
	var out *Acquisition
	err = l.write(ctx, lock, func(w *writeTx) (error, error) {
		if err := w.recordDisplaced(id, 0); err != nil {
			return nil, err
		}
		h := w.v.holder
		if h == nil || h.foreign || h.rec.RequestID != id.RequestID || token != 0 && h.token != token {
			if s, err := w.sharedHolderOf(lock, id.RequestID); err != nil || s != nil && (token == 0 || s.token == token) {
				if err != nil {
					return nil, err
				}
				out, err = w.heartbeatShared(s, id)
				return nil, err
			}
			nh, past, err := w.notHolder(lock, id, h)
			if err != nil {
				return nil, err
			}
			if !nh.Lost {
				return w.refuse(events.ActionHeartbeat, id, h, nh)
			}
			// The failure is the lost holding's, recorded under its actor and
			// pid as its heartbeats were; a caller that is not that process
			// (a heartbeat --request-id from a shell after a steal) is
			// recorded_by.
			p := &events.HeartbeatFailedPayload{ConsecutiveFailures: priorFailures + 1, Error: nh.Error(), LockLost: true}
			by := id
			if past.Actor != "" && (past.Actor != id.Actor || past.PID != id.PID) {
				by = Identity{RequestID: id.RequestID, Actor: past.Actor, PID: past.PID}
				p.RecordedBy = &events.Caller{Actor: id.Actor, HostID: l.host.ID, PID: id.PID}
			}
			if _, err := w.append(events.HeartbeatFailed, by, p); err != nil {
				return nil, err
			}
			return nh, nil
		}
		renewed := *h
		renewed.heartbeat = w.now
		renewed.rec.LastHeartbeatAt = events.FormatLockTime(w.now)
		renewed.file = renewed.rec.File()
		if !w.v.interloper && !bytes.Equal(renewed.file, h.file) {
			j, err := l.files.Replace(lock, renewed.file)
			if err != nil {
				return nil, err
			}
			w.addJournal("", j)
		}
		if err := w.reconcileTargets(nil, false); err != nil {
			return nil, err
		}
		if err := w.refreshTargets(h, &renewed); err != nil {
			return nil, err
		}
		ev, err := w.append(events.LockHeartbeat, Identity{RequestID: id.RequestID, Actor: h.rec.Actor, PID: h.rec.PID}, &events.Heartbeat{})
		if err != nil {
			return nil, err
		}
		out = &Acquisition{Lock: lock, RequestID: id.RequestID, FencingToken: h.token, Seq: ev.Seq, Record: renewed.rec}
		return nil, w.saveHolder(&renewed, ev.Seq)
	})
	return out, err
}

// RecordLossOf appends heartbeat_failed with lock_lost for the holding of
// holder, written by another process than the holder's (the one a run
// leaves behind to record a loss once the ledger answers): as a heartbeat
// that found the loss records it, the envelope is the holding's (its
// actor and pid) and recorded_by is by, this process.
func (l *Ledger) RecordLossOf(ctx context.Context, lock string, by Identity, holder events.Holder, failures int, cause string) error {
	if err := events.ValidateRequestID(holder.RequestID); err != nil {
		return err
	}
	by.RequestID = holder.RequestID
	by, err := l.resolve(by, l.now())
	if err != nil {
		return err
	}
	owner := Identity{RequestID: holder.RequestID, Actor: holder.Actor, PID: holder.PID}
	if owner.Actor == "" {
		owner.Actor = by.Actor
	}
	return l.appendOn(ctx, lock, events.HeartbeatFailed, owner, &events.HeartbeatFailedPayload{
		ConsecutiveFailures: max(failures, 1), Error: failureCause(cause), LockLost: true,
		RecordedBy: &events.Caller{Actor: by.Actor, HostID: l.host.ID, PID: by.PID}})
}

// RecordHeartbeatFailure appends heartbeat_failed for a holder whose
// heartbeats keep failing (or who found its lock lost).
func (l *Ledger) RecordHeartbeatFailure(ctx context.Context, lock string, id Identity, consecutive int, cause string, lost bool) error {
	return l.appendOn(ctx, lock, events.HeartbeatFailed, id, &events.HeartbeatFailedPayload{
		ConsecutiveFailures: consecutive, Error: failureCause(cause), LockLost: lost})
}

// failureCause is heartbeat_failed's error text: cause, at most 4096 bytes.
func failureCause(cause string) string {
	return cmp.Or(cause[:min(len(cause), 4096)], "unknown error")
}

// notHolder is the refusal of request id's action on lock, whose holder is
// h (nil: free), by what the log says of the request's own holding of it.
func (w *writeTx) notHolder(lock string, id Identity, h *holding) (*NotHolderError, replay.PastHolding, error) {
	past, err := replay.PastHoldingOf(w.ctx, w.q, lock, id.RequestID)
	nh := &NotHolderError{Lock: lock, RequestID: id.RequestID, Lost: past.Lost(), ReleasedSeq: past.ReleasedSeq}
	if h != nil {
		nh.Holder, nh.Corrupt = &h.rec, h.corrupt
	}
	return nh, past, err
}
