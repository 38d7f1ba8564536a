// Package archive moves the oldest events of a ledger out of its live
// store and back in view: an archive file holds the events below a signed
// checkpoint's end exactly as stored, in export's JSON Lines (so that
// verify --file checks it alone), with that checkpoint and, when it does
// not start at seq 1, the Merkle tree before it. A prune (ledger.Prune)
// removes those events once the archive verifies against the live log:
// same ledger, same leaves as the stored tree, chaining into the first
// event that stays. The stored Merkle hashes all stay, so every proof
// keeps working and plain verify checks the live log from the boundary.
package archive

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/store"
)

// BoundaryError: the seq asked for is not one an archive may end before
// (a stored checkpoint of size Below-1 within the live log); Nearest lists
// the closest ones that are.
type BoundaryError struct {
	Below   int64
	Reason  string
	Nearest []int64
}

func (e *BoundaryError) Error() string {
	s := e.Reason
	if e.Below > 0 {
		s = fmt.Sprintf("--below %d: %s", e.Below, e.Reason)
	}
	if len(e.Nearest) == 0 {
		return s + "; no stored checkpoint makes one yet: sign one at the head with lockledger checkpoint"
	}
	var near []string
	for _, n := range e.Nearest {
		near = append(near, fmt.Sprintf("--below %d", n))
	}
	return s + "; the nearest boundaries are " + strings.Join(near, " and ") + " (lockledger checkpoint signs one at the head)"
}

func (e *BoundaryError) Unwrap() error { return store.ErrPruneBoundary }

// Boundary checks that the live log read through q may be archived below
// seq below: a stored checkpoint of size below-1 covers exactly the events
// from the live log's first to below-1, and the event below stays. With
// before set instead (below 0), it picks the largest such boundary whose
// events are all dated before it.
func Boundary(ctx context.Context, q store.Querier, below int64, before time.Time) (int64, error) {
	first, err := store.FirstSeq(ctx, q)
	if err != nil {
		return 0, err
	}
	_, last, err := store.TreeLag(ctx, q)
	if err != nil {
		return 0, err
	}
	sizes, err := store.CheckpointSizes(ctx, q)
	if err != nil {
		return 0, err
	}
	var ok []int64 // the boundaries: size+1 for each checkpoint inside the live log, short of its head
	for _, s := range sizes {
		if s >= first && s < last {
			ok = append(ok, s+1)
		}
	}
	if below == 0 {
		lastOld, err := store.LastSeqBefore(ctx, q, events.FormatTime(before))
		if err != nil {
			return 0, err
		}
		for i := len(ok) - 1; i >= 0; i-- {
			if ok[i]-1 <= lastOld {
				return ok[i], nil
			}
		}
		return 0, &BoundaryError{Reason: fmt.Sprintf("no checkpoint boundary has all its events dated before %s", before.UTC().Format(time.RFC3339)), Nearest: nearest(ok, 0)}
	}
	if slices.Contains(ok, below) {
		return below, nil
	}
	reason := fmt.Sprintf("no stored checkpoint covers exactly seq %d-%d", first, below-1)
	switch {
	case below <= first:
		reason = fmt.Sprintf("the live log starts at seq %d", first)
	case below > last:
		reason = fmt.Sprintf("the live log ends at seq %d, which stays", last)
	}
	return 0, &BoundaryError{Below: below, Reason: reason, Nearest: nearest(ok, below)}
}

// nearest picks the boundary just below and just above seq (the largest
// and smallest when seq is 0).
func nearest(ok []int64, seq int64) []int64 {
	if len(ok) == 0 {
		return nil
	}
	if seq == 0 {
		return []int64{ok[0], ok[len(ok)-1]}
	}
	i, _ := slices.BinarySearch(ok, seq)
	var out []int64
	if i > 0 {
		out = append(out, ok[i-1])
	}
	if i < len(ok) {
		out = append(out, ok[i])
	}
	return out
}

// Written is what Write put in an archive.
type Written struct {
	FirstSeq, LastSeq int64
	Events            int64
	SHA256            string
}

// Write writes the archive of the live log's events below seq below (a
// Boundary) to w, read through q (one snapshot): the tree line when the
// live log starts after seq 1, every stored checkpoint of size below-1,
// then the events as stored.
func Write(ctx context.Context, q store.Querier, w io.Writer, below int64) (*Written, error) {
	if _, err := Boundary(ctx, q, below, time.Time{}); err != nil {
		return nil, err
	}
	first, err := store.FirstSeq(ctx, q)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, h), 256<<10)
	if first > 1 {
		tree, err := checkpoint.TreeFrom(first-1, store.TreeReader(ctx, q))
		if err != nil {
			return nil, fmt.Errorf("archive: the Merkle tree before seq %d: %w (lockledger verify says why)", first, err)
		}
		if err := replay.WriteTreeLine(bw, first-1, tree.Frontier()); err != nil {
			return nil, err
		}
	}
	cps, err := store.StoredCheckpoints(ctx, q, below-1, below-1)
	if err != nil {
		return nil, err
	}
	for _, c := range cps {
		if err := replay.WriteCheckpointLine(bw, c.Note); err != nil {
			return nil, err
		}
	}
	out := &Written{FirstSeq: first, LastSeq: below - 1}
	err = replay.ScanRows(ctx, q, replay.Filter{FromSeq: first, ToSeq: below - 1}, func(r *replay.Row) error {
		out.Events++
		return replay.WriteExportLine(bw, r)
	})
	if err != nil {
		return nil, err
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	if out.Events != below-first {
		return nil, fmt.Errorf("archive: read %d events of seq %d-%d: the live log has gaps (lockledger verify says where)", out.Events, first, below-1)
	}
	out.SHA256 = hex.EncodeToString(h.Sum(nil))
	return out, nil
}

// ErrMismatch: an archive is not the live log's prefix (another ledger's,
// another range, or events that differ from the ones the tree holds).
var ErrMismatch = errors.New("the archive does not match the live ledger")

// mismatch is op's (prune, unprune) ErrMismatch for c, saying how.
func (c *Checked) mismatch(op, format string, args ...any) error {
	return fmt.Errorf("%s: archive %s: %w: %s", op, c.Path, ErrMismatch, fmt.Sprintf(format, args...))
}
