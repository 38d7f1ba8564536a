package replay

// Cosignatures: witnesses off the machine (c2sp.org/tlog-witness) that
// cosigned the ledger's checkpoints. A witness cosigns a tree only when
// it extends every tree of the log it cosigned before, so a cosigned
// checkpoint whose root is not this log's tree at its size is a split
// view: the witness was shown another log.

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/verify"
)

// cosigned is one witness's verified cosignature, as an anchor.
type cosigned struct {
	witness string
	a       *anchor
}

// prepareCosignatures opens every cosignature with the witness keys and
// lists the checkpoints they cosigned as anchors. origin is the ledger's
// origin so far ("" for an export that carries no checkpoint); the one
// to use from now on is returned.
func (t *treeCheck) prepareCosignatures(origin string) string {
	tr := t.trust
	if len(tr.Cosigners) == 0 {
		return origin
	}
	for _, ns := range tr.Cosignatures {
		n, err := note.Open(ns.Note, note.VerifierList(tr.Cosigners...))
		var unverified *note.UnverifiedNoteError
		if errors.As(err, &unverified) {
			continue // another witness's: not one given
		}
		res := &verify.CheckpointResult{Source: ns.Source, Carried: ns.Carried}
		t.report.Checkpoints = append(t.report.Checkpoints, res)
		var c checkpoint.Checkpoint
		if err == nil {
			c, err = checkpoint.ParseText([]byte(n.Text))
		}
		if err != nil {
			res.Result, res.Detail = "invalid", err.Error()
			t.invalid = append(t.invalid, verify.Problem{Kind: verify.KindCheckpoint, Detail: fmt.Sprintf(
				"%s is not a valid cosignature by a given witness key (it was changed after it was made): %v", ns.Source, err)})
			continue
		}
		if origin == "" {
			origin = c.Origin
		}
		if c.Origin != origin {
			res.Result, res.Detail = "invalid", fmt.Sprintf("it is a cosignature of %q, not of %q", c.Origin, origin)
			t.report.Add(verify.Problem{Seq: 1, Kind: verify.KindCheckpoint, Detail: fmt.Sprintf(
				"%s cosigns another ledger (%s, this log is %s): the database was swapped for another ledger's", ns.Source, c.Origin, origin)})
			continue
		}
		for _, sig := range n.Sigs {
			r := res
			if sig != n.Sigs[0] {
				r = &verify.CheckpointResult{Source: ns.Source, Carried: ns.Carried}
				t.report.Checkpoints = append(t.report.Checkpoints, r)
			}
			r.Size, r.Key, r.Time = c.Size, "witness "+sig.Name, c.Time
			a := &anchor{name: fmt.Sprintf("the checkpoint of size %d that witness %s cosigned (%s)", c.Size, sig.Name, ns.Source),
				carried: ns.Carried, size: c.Size, root: c.Root, time: c.Time, result: r, split: true}
			t.anchors = append(t.anchors, a)
			t.cosigned = append(t.cosigned, cosigned{witness: sig.Name, a: a})
		}
	}
	return origin
}

// endCosignatures checks the quorum: at least Quorum of the witness keys
// (all of them when 0) cosigned the largest checkpoint any of them
// cosigned. end is the number of events the log holds.
func (t *treeCheck) endCosignatures(end int64) {
	tr := t.trust
	if len(tr.Cosigners) == 0 || end == 0 {
		return
	}
	// largest: the largest size each witness cosigned.
	largest := map[string]int64{}
	for _, c := range t.cosigned {
		largest[c.witness] = max(largest[c.witness], c.a.size)
	}
	t.uncosigned(end, largest)
	quorum := tr.Quorum
	if quorum <= 0 || quorum > len(tr.Cosigners) {
		quorum = len(tr.Cosigners)
	}
	var names []string
	for _, v := range tr.Cosigners {
		names = append(names, v.Name())
	}
	if len(t.cosigned) == 0 {
		t.report.Add(verify.Problem{Seq: 1, Kind: verify.KindCheckpoint, Detail: fmt.Sprintf(
			"the ledger holds no cosignature by the witness keys given (%s): no witness cosigned this log, or the cosignatures were deleted",
			strings.Join(names, ", "))})
		return
	}
	newest := slices.Max(slices.Collect(maps.Values(largest)))
	var at []string
	for w, s := range largest {
		if s == newest {
			at = append(at, w)
		}
	}
	if len(at) >= quorum {
		return
	}
	// The largest size a quorum of witnesses cosigned, or a larger one.
	sizes := slices.Sorted(maps.Values(largest))
	vouched := int64(0)
	if len(sizes) >= quorum {
		vouched = sizes[len(sizes)-quorum]
	}
	slices.Sort(at)
	t.report.Add(verify.Problem{Seq: vouched + 1, Kind: verify.KindCheckpoint, Detail: fmt.Sprintf(
		"only %d of the %d witness keys given cosigned the newest checkpoint they cover (size %d: %s); the quorum is %d, so nothing vouches for the events from seq %d with it",
		len(at), len(tr.Cosigners), newest, strings.Join(at, ", "), quorum, vouched+1)})
}

// uncosigned lists, for each witness key given, the checkpoints it did
// not cosign (see Uncosigned), in the report and in a note each.
func (t *treeCheck) uncosigned(end int64, largest map[string]int64) {
	var sizes []int64
	for _, a := range t.anchors {
		if a.carried && !a.split && !a.isHead && a.state == matched && a.size <= end {
			sizes = append(sizes, a.size)
		}
	}
	slices.Sort(sizes)
	sizes = slices.Compact(sizes)
	for _, v := range t.trust.Cosigners {
		w := v.Name()
		i, _ := slices.BinarySearch(sizes, largest[w]+1)
		missing := sizes[i:]
		if len(missing) == 0 {
			continue
		}
		u := verify.Uncosigned{Witness: w, Cosigned: largest[w], Count: len(missing), Sizes: slices.Clone(missing[:min(len(missing), verify.MaxUncosignedSizes)])}
		t.report.Uncosigned = append(t.report.Uncosigned, u)
		t.report.Notes = append(t.report.Notes, u.String())
	}
}
