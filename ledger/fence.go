package ledger

import (
	"context"
	"strconv"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/termtext"
)

// maxFenceResource is the longest resource a fence_rejected event names
// (its schema's maxLength).
const maxFenceResource = 4096

// RecordFenceRejected appends fence_rejected on lock: a fence refused a
// write to p.Resource carrying p.FencingToken, below the resource's
// p.CurrentToken. id is the writer (its request, and its process). A
// resource that is not plain text (a path may hold any byte) is recorded
// escaped, and clipped: the refusal is recorded whatever the name. It
// changes no lock state.
func (l *Ledger) RecordFenceRejected(ctx context.Context, lock string, id Identity, p events.FenceRejectedPayload) error {
	if err := events.ValidateLockName(lock); err != nil {
		return err
	}
	switch p.Action {
	case events.FenceFileWrite, events.FencePostgresWrite, events.FenceCheck:
	default:
		return events.Invalid("action", p.Action, "must be file_write, postgres_write or check")
	}
	if p.Resource == "" {
		return events.Invalid("resource", "", "must not be empty")
	}
	p.Resource = termtext.Clip(termtext.Escape(p.Resource), maxFenceResource)
	if p.FencingToken < 1 {
		return events.Invalid("fencing token", strconv.FormatInt(p.FencingToken, 10), "must be a positive integer")
	}
	if p.CurrentToken <= p.FencingToken {
		return events.Invalid("current token", strconv.FormatInt(p.CurrentToken, 10),
			"must be above the refused fencing token "+strconv.FormatInt(p.FencingToken, 10))
	}
	id, err := l.resolve(id, l.now())
	if err != nil {
		return err
	}
	return l.write(ctx, lock, func(w *writeTx) (error, error) {
		_, err := w.append(events.FenceRejected, id, &p)
		return nil, err
	})
}
