package replay

import (
	"context"
	"errors"

	"github.com/lockledger/lockledger/store"
)

// Querier is what the reads need; *sql.DB, *sql.Tx and *sql.Conn all
// satisfy it. Use a read-only transaction (sql.TxOptions{ReadOnly: true})
// when several reads must see one snapshot.
type Querier = store.Querier

// Filter selects events (see store.Filter).
type Filter = store.Filter

// ErrStop ends a Scan early without an error.
var ErrStop = errors.New("replay: stop")

// Scan streams the events that f selects, in seq order, to fn, decoded.
// fn may return ErrStop to end the scan. A body that does not decode is an
// error that names its seq (verify tells what happened to it).
func Scan(ctx context.Context, q Querier, f Filter, fn func(*Event) error) error {
	return ScanRows(ctx, q, f, func(r *Row) error {
		ev, err := DecodeEvent(r.Seq, r.Body)
		if err != nil {
			return err
		}
		ev.Seq, ev.PrevHash, ev.Hash = r.Seq, r.PrevHash, r.Hash
		return fn(ev)
	})
}

// ScanRows streams the rows f selects, in seq order, without decoding the
// bodies: export copies a damaged ledger faithfully, for verify to judge.
func ScanRows(ctx context.Context, q Querier, f Filter, fn func(*Row) error) error {
	for sr, err := range store.Events(ctx, q, f) {
		if err != nil {
			return err
		}
		if err := fn(&Row{Seq: sr.Seq, Body: sr.Body, PrevHash: sr.PrevHash, Hash: sr.Hash}); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
	}
	return nil
}
