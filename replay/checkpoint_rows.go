package replay

import (
	"cmp"
	"fmt"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/verify"
)

// rowUnchecked judges a checkpoint row of the ledger when no verifier key
// was given. Its signature vouches for nothing then,
// but a writer only ever stores a signed note of this ledger, under the
// size it covers: anything else was written by hand. A well-formed one is
// still matched against the log (a weak anchor): a log it does not match,
// or that ends before it, was rewritten, or the checkpoint forged. It
// returns the origin the checkpoints name.
func (t *treeCheck) rowUnchecked(ns NoteSource, res *verify.CheckpointResult, s *checkpoint.Signed, err error, origin string) string {
	if err != nil {
		if res.Size == 0 {
			res.Size = ns.Size
		}
		res.Result, res.Detail = "invalid", err.Error()
		t.invalid = append(t.invalid, verify.Problem{Kind: verify.KindCheckpoint, Detail: fmt.Sprintf(
			"%s is not a signed checkpoint (%v): no writer stores one, it was written by hand", describe(res), err)})
		return origin
	}
	origin = cmp.Or(origin, s.Origin)
	switch {
	case s.Origin != origin:
		t.otherLedger(res, s.Origin, origin)
	case ns.Size != s.Size:
		t.rowSizeDiffers(ns, res, s)
	default:
		t.anchors = append(t.anchors, &anchor{name: describe(res), carried: true, size: s.Size, root: s.Root, time: s.Time,
			result: res, weak: true})
	}
	return origin
}

// unchecked is what a finding adds about an anchor whose signature no
// key checked.
func (a *anchor) unchecked() string {
	if a.weak {
		return " (its signature not checked: no --verifier-key)"
	}
	return ""
}

// rowSizeDiffers reports a checkpoint row whose size column is not the
// size its note covers: a writer stores both from one checkpoint, so the
// row was written by hand (another row's note under this one's id).
func (t *treeCheck) rowSizeDiffers(ns NoteSource, res *verify.CheckpointResult, s *checkpoint.Signed) {
	res.Result = "invalid"
	res.Detail = fmt.Sprintf("its row claims size %d, its note covers %d", ns.Size, s.Size)
	t.invalid = append(t.invalid, verify.Problem{Kind: verify.KindCheckpoint, Detail: fmt.Sprintf(
		"%s: its row claims size %d but its note covers %d events: no writer stores that, the row was written by hand",
		describe(res), ns.Size, s.Size)})
}
