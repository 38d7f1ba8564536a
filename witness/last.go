package witness

import (
	"context"
	"fmt"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/trust"
)

// Last reads the largest checkpoint of ledger id signed by v from each
// witness (see trust.Last), waiting at most the timeout as Publish does. It
// returns those found and the first witness that could not be read (past
// the timeout: ErrTimeout), after the others were read.
func (p *Publisher) Last(ctx context.Context, id string, v note.Verifier) ([]checkpoint.Earlier, error) {
	if len(p.paths) == 0 {
		return nil, nil
	}
	type result struct {
		found []checkpoint.Earlier
		err   error
	}
	r, err := within(ctx, p, func() (r result) {
		for _, w := range p.paths {
			s, err := trust.Last(w, id, v)
			switch {
			case err != nil && r.err == nil:
				r.err = fmt.Errorf("witness %s: reading its last checkpoint: %w", w, err)
			case s != nil:
				r.found = append(r.found, checkpoint.Earlier{Checkpoint: s.Checkpoint, Source: "witness " + w})
			}
		}
		return r
	})
	if err != nil {
		return nil, fmt.Errorf("witness %s: reading the last checkpoint: %w", strings.Join(p.paths, ", "), err)
	}
	return r.found, r.err
}
