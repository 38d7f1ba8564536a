package ledger

import (
	"context"
	"fmt"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/store"
)

// ReleaseRequest frees a lock.
type ReleaseRequest struct {
	Lock string
	Identity
	// Result is success, failure or cancelled; "" is failure with a
	// non-zero ExitCode, else success, or forced for a Force release of
	// another's lock without an ExitCode.
	Result      string
	FailureStep string
	ExitCode    *int
	// Force releases a lock held by someone else, recording forced: true.
	// With a RequestID it is a compare-and-release: the lock is released
	// only while that request holds it, and refused (*NotHolderError) when
	// another does.
	Force bool
	// Note is the operator's reason for a forced release.
	Note string
	// FencingToken, when set, releases only the holding with that token: a
	// request id reclaimed by another process is no longer the caller's.
	FencingToken int64
	// Secret is the holding's release secret (Acquisition.ReleaseSecret):
	// with it a release without Force is accepted from any uid, recorded
	// with authorized_by release_secret when the caller is not the holder
	// by the uid rule. A wrong secret is refused. Force ignores it.
	Secret string
}

// ReleaseOutcome says what a release did: freed a holder's lock, or found
// nothing to release.
type ReleaseOutcome struct {
	Lock string
	// Released: lock_released was recorded at Seq with Result; Forced when
	// it was another request's lock (ReleasedRequestID).
	Released          bool
	Seq               int64
	Result            string
	Forced            bool
	ReleasedRequestID string
	// FencingToken is the released holding's token (0 when nothing was
	// released).
	FencingToken int64
	// When nothing was released: ReleasedSeq is the request's own earlier
	// release (0 when it never held the lock, as with Force on a free
	// lock); State and Holder are the lock as the release found it.
	ReleasedSeq int64
	State       string
	Holder      *events.Record
}

// Release frees a lock held by req.RequestID. A request that released the
// lock already gets an outcome with Released false (nothing to release),
// as does Force on a free lock. A lock held by another request, or lost
// by this one, is refused with *NotHolderError unless Force, and the
// refusal recorded as action_refused; so is a release without Force by a
// caller that is not the holding's (NotHolderError.Denied): another uid
// than the one that acquired it, or anyone but a running lockledger run
// that holds it, unless it presents the holding's release secret
// (ReleaseRequest.Secret; recorded as authorized_by release_secret). A wrong
// secret is refused the same way. lock_released's envelope is always the caller's; when the
// caller is not the holder itself, released_request_id and held_by (with
// the holder's uid) say whose holding it was.
func (l *Ledger) Release(ctx context.Context, req ReleaseRequest) (*ReleaseOutcome, error) {
	if err := events.ValidateLockName(req.Lock); err != nil {
		return nil, err
	}
	if req.RequestID == "" && !req.Force {
		return nil, events.Invalid("request id", "", "is required to release (or use --force)")
	}
	if err := events.ValidText("failure step", req.FailureStep, 256, true); err != nil {
		return nil, err
	}
	if err := events.ValidText("reason", req.Note, 1024, true); err != nil {
		return nil, err
	}
	if len(req.Secret) > maxReleaseSecret {
		// Never echoed: the value is a secret.
		return nil, events.Invalid("release secret", "", fmt.Sprintf("must be at most %d bytes", maxReleaseSecret))
	}
	if req.Force {
		req.Secret = ""
	}
	if req.ExitCode != nil && (*req.ExitCode < 0 || *req.ExitCode > 255) {
		return nil, events.Invalid("exit code", fmt.Sprint(*req.ExitCode), "must be 0-255")
	}
	// A forced release that says nothing of the work records result forced.
	untold := req.Result == "" && req.ExitCode == nil
	if req.Result == "" {
		// A job that exited non-zero failed, whether or not the caller said so.
		req.Result = events.ResultSuccess
		if req.ExitCode != nil && *req.ExitCode != 0 {
			req.Result = events.ResultFailure
		}
	}
	switch req.Result {
	case events.ResultSuccess, events.ResultFailure, events.ResultCancelled:
	default:
		return nil, events.Invalid("result", req.Result, "must be success, failure or cancelled")
	}
	id, err := l.resolve(req.Identity, l.now())
	if err != nil {
		return nil, err
	}
	var out *ReleaseOutcome
	err = l.write(ctx, req.Lock, func(w *writeTx) (error, error) {
		if err := w.recordDisplaced(id, 0); err != nil {
			return nil, err
		}
		h := w.v.holder
		mine := h != nil && !h.foreign && h.rec.RequestID == id.RequestID && (req.FencingToken == 0 || h.token == req.FencingToken)
		var s *sharedHolding // the request's shared holding, released instead
		if !mine && (h == nil || h.foreign) && req.RequestID != "" {
			// Another tool's file beside shared holders blocks acquirers, not
			// a shared holder's release of its own slot.
			sh, err := w.sharedHolderOf(req.Lock, id.RequestID)
			if err != nil {
				return nil, err
			}
			if sh != nil && (req.FencingToken == 0 || sh.token == req.FencingToken) {
				s, h, mine = sh, sh.holding, !req.Force
			}
		}
		if !mine && h == nil && req.Force && req.RequestID == "" {
			if sh, err := loadShared(w.ctx, w.q, req.Lock); err != nil || len(sh) > 0 {
				if err != nil {
					return nil, err
				}
				return nil, events.Invalid("request id", "", fmt.Sprintf(
					"is required to release one of the %d shared holders of %s (--force alone names no holder)", len(sh), req.Lock))
			}
		}
		if req.Force && req.RequestID != "" {
			// An operator's release of the named holding: recorded as
			// forced, and never of another holder that took the lock since.
			named := h != nil && h.corrupt == nil && h.rec.RequestID == id.RequestID &&
				(req.FencingToken == 0 || h.token == req.FencingToken)
			if h != nil && !named {
				nh, _, err := w.notHolder(req.Lock, id, h)
				if err != nil {
					return nil, err
				}
				return w.refuse(events.ActionRelease, id, h, nh)
			}
			mine = false
		}
		if !mine && (h == nil || !req.Force) {
			nh, _, err := w.notHolder(req.Lock, id, h)
			if err != nil {
				return nil, err
			}
			if req.Force || nh.ReleasedSeq > 0 {
				out = &ReleaseOutcome{Lock: req.Lock, ReleasedSeq: nh.ReleasedSeq, State: events.StateFree}
				if h != nil {
					rec := h.rec
					out.State, _ = judge(h, w.now, l.host, l.probe, 0)
					out.Holder = &rec
				}
				return nil, nil
			}
			return w.refuse(events.ActionRelease, id, h, nh)
		}
		if err := w.loadAcquirer(h); err != nil {
			return nil, err
		}
		bySecret := false
		if mine {
			var why string
			if why, bySecret = l.releaseDenied(h, req.Secret); why != "" {
				return w.refuse(events.ActionRelease, id, h,
					&NotHolderError{Lock: req.Lock, RequestID: id.RequestID, Holder: &h.rec, Denied: why})
			}
		}
		if s == nil {
			if err := w.reconcileTargets(nil, false); err != nil {
				return nil, err
			}
			released := *h
			w.removeAfterCommit(func() error { return l.files.Remove(req.Lock, released.file) })
			if err := w.removeTargetsAfterCommit(&released); err != nil {
				return nil, err
			}
			if !mine && untold {
				req.Result = events.ResultForced
			}
		}
		p := &events.Released{HeldDurationSeconds: seconds(w.now.Sub(h.created)), Result: req.Result,
			FailureStep: req.FailureStep, ExitCode: req.ExitCode, Forced: !mine, FencingToken: h.token, Note: req.Note}
		if s != nil && mine {
			p.Note = "" // a shared holder's own release: an operator's reason goes with --force only
		}
		if p.HeldBy = w.heldByOther(id, h); !mine || p.HeldBy != nil {
			p.ReleasedRequestID = h.rec.RequestID
		}
		if bySecret {
			p.AuthorizedBy = events.AuthorizedByReleaseSecret
		}
		if h.foreign && h.created.IsZero() {
			p.HeldDurationSeconds = 0
		}
		// The envelope is the caller's, always: whose holding it was is
		// released_request_id and held_by when the caller is not the holder.
		ev, err := w.append(events.LockReleased, id, p)
		if err != nil {
			return nil, err
		}
		out = &ReleaseOutcome{Lock: req.Lock, Released: true, Seq: ev.Seq, Result: req.Result, Forced: !mine,
			ReleasedRequestID: p.ReleasedRequestID, FencingToken: h.token, State: events.StateFree}
		if s != nil {
			return nil, store.DeleteHolder(w.ctx, w.q, req.Lock, h.rec.RequestID)
		}
		if h.foreign {
			return nil, nil // the ledger never held it: no row to free
		}
		return nil, w.saveFree(ev.Seq)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
