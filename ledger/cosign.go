package ledger

import (
	"context"
	"errors"

	"github.com/lockledger/lockledger/store"
	"github.com/lockledger/lockledger/witness/tlogwitness"
)

// WithCosigners has each witness cosign every checkpoint signed through
// this Ledger, once its write is done, and stores their cosignatures.
func WithCosigners(ws ...*tlogwitness.Witness) Option {
	return func(c *config) error { c.signing.cosigners = append(c.signing.cosigners, ws...); return nil }
}

// cosign has every witness cosign cp and stores the cosignatures; a
// refusal is a *tlogwitness.RefusedError (see tlogwitness.CosignAll).
// Cosignatures got are stored even when ctx ends meanwhile (the write is
// bounded by the busy timeout): a witness that has cosigned cp holds it
// either way.
func (l *Ledger) cosign(ctx context.Context, cp *Checkpointed) error {
	got, err := tlogwitness.CosignAll(ctx, l.signing.cosigners, []byte(cp.Note), store.Witnessed{S: l.store})
	if len(got) == 0 {
		return err
	}
	for _, c := range got {
		cp.Cosigned = append(cp.Cosigned, c.URL)
	}
	return errors.Join(err, l.update(context.WithoutCancel(ctx), func(w *writeTx) (error, error) {
		w.rows = true
		return nil, store.InsertCosignatures(ctx, w.q, got)
	}))
}
