package tlogwitness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/lockledger/lockledger/checkpoint"
)

// Prover proves the log's trees: a consistency proof that its tree of
// size records extends the one of old records.
type Prover interface {
	ProveTree(ctx context.Context, size, old int64) (tlog.TreeProof, error)
}

// RefusedError: the witness would not cosign the checkpoint because it
// has cosigned a tree of the log that this one does not extend (a log
// rewritten, cut or forked under it), or it refused the request itself.
type RefusedError struct {
	URL     string
	Witness string // the witness key's name
	Size    int64  // the checkpoint's
	// Cosigned is the size of the tree the witness cosigned last: the one
	// it named (409), else the one the request gave.
	Cosigned int64
	// Ahead: the witness holds a larger tree than the checkpoint's.
	Ahead bool
	Err   error // the witness's answer (a *ResponseError), or why no proof could be made
}

func (e *RefusedError) Error() string {
	who := fmt.Sprintf("witness %s (%s)", e.Witness, e.URL)
	switch {
	case e.Ahead:
		return fmt.Sprintf("%s refused the checkpoint of %d events: it has cosigned a tree of %d events of this log (a log that no longer holds them was cut)", who, e.Size, e.Cosigned)
	case e.Cosigned > 0 && isStatus(e.Err, http.StatusUnprocessableEntity):
		return fmt.Sprintf("%s refused the checkpoint of %d events: the tree of %d events it cosigned is not the first %d events of this log (it was rewritten, or another log was signed): %v",
			who, e.Size, e.Cosigned, e.Cosigned, e.Err)
	}
	return fmt.Sprintf("%s refused the checkpoint of %d events: %v", who, e.Size, e.Err)
}

func (e *RefusedError) Unwrap() error { return e.Err }

func isStatus(err error, status int) bool {
	var re *ResponseError
	return errors.As(err, &re) && re.Status == status
}

// Cosign asks w to cosign the signed checkpoint, with a consistency proof
// (from log) from the tree of from records, the last one the caller knows
// w cosigned (0: none). A witness that holds another size says so (409):
// Cosign tries once more with a proof from that size. It returns w's
// cosignature; a witness that answers but will not cosign is a
// *RefusedError. The whole exchange takes at most w's timeout.
func (w *Witness) Cosign(ctx context.Context, signed []byte, from int64, log Prover) (*Cosignature, error) {
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	s, err := checkpoint.Open(signed)
	if err != nil {
		return nil, err
	}
	text := signed[:bytes.Index(signed, []byte("\n\n"))+1]
	if from > s.Size {
		from = 0
	}
	sent := from
	for try := 0; ; try++ {
		proof, err := w.prove(ctx, log, s.Size, sent)
		if err != nil {
			return nil, err
		}
		sigs, err := w.AddCheckpoint(ctx, sent, proof, signed)
		var conflict *ConflictError
		switch {
		case errors.As(err, &conflict) && try == 0 && conflict.Size != sent:
			if conflict.Size > s.Size {
				return nil, &RefusedError{URL: w.URL, Witness: w.Verifier.Name(), Size: s.Size, Cosigned: conflict.Size, Ahead: true, Err: err}
			}
			sent = conflict.Size
			continue
		case isStatus(err, http.StatusUnprocessableEntity) || isStatus(err, http.StatusForbidden) || isStatus(err, http.StatusBadRequest):
			return nil, &RefusedError{URL: w.URL, Witness: w.Verifier.Name(), Size: s.Size, Cosigned: sent, Err: err}
		case err != nil:
			return nil, fmt.Errorf("witness %s (%s): %w", w.Verifier.Name(), w.URL, err)
		}
		c, err := Open(text, sigs, w.Verifier)
		if err != nil {
			return nil, fmt.Errorf("witness %s (%s) answered %q: %w", w.Verifier.Name(), w.URL, strings.TrimSpace(string(sigs)), err)
		}
		c.URL = w.URL
		return c, nil
	}
}

func (w *Witness) prove(ctx context.Context, log Prover, size, old int64) (tlog.TreeProof, error) {
	if old == 0 || old == size {
		return nil, nil
	}
	p, err := log.ProveTree(ctx, size, old)
	if err != nil {
		return nil, fmt.Errorf("witness %s (%s): proving the tree of %d events extends the one of %d: %w", w.Verifier.Name(), w.URL, size, old, err)
	}
	return p, nil
}

// Log is the log witnesses are asked to cosign: its trees, and the
// cosignatures it keeps.
type Log interface {
	Prover
	// Cosigned is the largest tree size of which the log keeps a
	// cosignature by the witness key that verified accepts (0: none).
	Cosigned(ctx context.Context, key string, verified func(note []byte) (size int64, ok bool)) (int64, error)
	// Size is how many records the log holds now.
	Size(ctx context.Context) (int64, error)
}

// CosignAll asks every witness at once to cosign the signed checkpoint,
// each with a proof from the largest tree the log keeps its cosignature
// of (see Cosign), and waits for every answer: at most the longest
// witness timeout. It returns the cosignatures, and the refusals and
// failures joined. A witness that has cosigned a larger tree the log
// holds is neither: a later checkpoint reached it first, and was checked
// then.
func CosignAll(ctx context.Context, ws []*Witness, signed []byte, log Log) ([]*Cosignature, error) {
	got := make([]*Cosignature, len(ws))
	errs := make([]error, len(ws))
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Go(func() {
			from, err := log.Cosigned(ctx, w.Verifier.String(), func(n []byte) (int64, bool) {
				if c, err := OpenNote(n, w.Verifier); err == nil {
					return c.Size, true
				}
				return 0, false
			})
			if err != nil {
				errs[i] = err
				return
			}
			got[i], errs[i] = w.Cosign(ctx, signed, from, log)
			var re *RefusedError
			if errors.As(errs[i], &re) && re.Ahead {
				if n, err := log.Size(ctx); err == nil && n >= re.Cosigned {
					errs[i] = nil
				}
			}
		})
	}
	wg.Wait()
	return slices.DeleteFunc(got, func(c *Cosignature) bool { return c == nil }), errors.Join(errs...)
}
