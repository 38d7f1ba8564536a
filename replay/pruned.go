package replay

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/store"
	"github.com/lockledger/lockledger/verify"
)

// LastPrune reads the prune the live log q holds starts after: the last
// ledger_pruned marker that no later ledger_unpruned undid (an unprune
// undoes the last prune standing); nil when there is none.
func LastPrune(ctx context.Context, q Querier) (*verify.Archived, error) {
	var standing []*verify.Archived
	for r, err := range store.PruneMarkers(ctx, q) {
		if err != nil {
			return nil, err
		}
		seq := r.Seq
		if events.Type(r.Type) == events.LedgerUnpruned {
			if len(standing) > 0 {
				standing = standing[:len(standing)-1]
			}
			continue
		}
		_, p, err := events.Decode(r.Body)
		if err != nil {
			return nil, fmt.Errorf("replay: the ledger_pruned event at seq %d: %w", seq, err)
		}
		pr, _ := p.(*events.Pruned)
		if pr == nil {
			return nil, fmt.Errorf("replay: the ledger_pruned event at seq %d holds no prune", seq)
		}
		a := &verify.Archived{BelowSeq: pr.LastSeq + 1, FirstSeq: pr.FirstSeq, HeadHash: pr.HeadHash, MarkerSeq: seq}
		a.ArchiveSHA256, a.Root, _ = events.ParsePruneNote(pr.Note)
		standing = append(standing, a)
	}
	if len(standing) == 0 {
		return nil, nil
	}
	return standing[len(standing)-1], nil
}

// startPruned sets c up for a ledger whose live log starts after a prune:
// the chain from the last marker's head hash, the tree from the stored
// hashes at the archive boundary (which must hash to the marker's root).
// It reports whether the log was pruned; a log that starts after seq 1
// with no marker that explains it is left to the chain, which reports the
// events missing.
func (c *checker) startPruned(ctx context.Context, q Querier) (bool, error) {
	first, err := store.FirstSeq(ctx, q)
	if err != nil {
		return false, err
	}
	if first <= 1 {
		return false, nil
	}
	a, err := LastPrune(ctx, q)
	if err != nil || a == nil {
		return false, err
	}
	c.report.Archived = a
	c.chain = newChain(a.HeadHash, false, c.report)
	c.fromOne = false
	if first != a.BelowSeq {
		c.report.Add(verify.Problem{Seq: a.BelowSeq, Kind: verify.KindDeleted, Detail: fmt.Sprintf(
			"the live log starts at seq %d, but the last prune (ledger_pruned, seq %d) archived only the events below seq %d: events were deleted by hand",
			first, a.MarkerSeq, a.BelowSeq)})
		c.chain.damaged = true
	}
	tree, err := checkpoint.TreeFrom(a.BelowSeq-1, store.TreeReader(ctx, q))
	if err == nil {
		err = c.tree.startAt(tree.Size(), tree.Frontier())
	}
	var root string
	if err == nil {
		h, rerr := tree.Root()
		root, err = hex.EncodeToString(h[:]), rerr
	}
	switch {
	case err != nil:
		c.report.Add(verify.Problem{Seq: a.BelowSeq, Kind: verify.KindMerkle, Detail: "the stored Merkle hashes at the archive boundary cannot be read: " + err.Error()})
	case root != a.Root:
		c.report.Add(verify.Problem{Seq: a.BelowSeq, Kind: verify.KindMerkle, Detail: fmt.Sprintf(
			"the stored Merkle hashes of the first %d events hash to %s, but the prune at seq %d recorded %s: the table was edited",
			a.BelowSeq-1, root, a.MarkerSeq, a.Root)})
	}
	c.report.Notes = append(c.report.Notes, fmt.Sprintf(
		"events below seq %d are archived (archive sha256 %s, recorded by ledger_pruned at seq %d): the chain is checked from seq %d's recorded predecessor, the Merkle tree from its stored hashes; the locks table and lock files are not checked against a replay, which would need the archived events",
		a.BelowSeq, a.ArchiveSHA256, a.MarkerSeq, a.BelowSeq))
	return true, nil
}

// marker is a ledger_pruned or ledger_unpruned event of the live log.
type marker struct {
	seq int64
	typ events.Type
}

// signedMarkers reports each prune and unprune of the live log that no
// checkpoint of exactly its size, signed by a key the verifier trusts,
// covers. The write that appends a marker stores such a checkpoint
// (ledger.Prune): a marker without one was made without the ledger's key,
// and a later signature over it vouches only that the signer saw it, not
// that what it removed was the signer's to remove. With no key to check,
// the markers are named in a note.
func (t *treeCheck) signedMarkers(markers []marker) {
	if len(markers) == 0 {
		return
	}
	if t.trust == nil || len(t.trust.Verifiers) == 0 {
		seqs := make([]string, len(markers))
		for i, m := range markers {
			seqs[i] = strconv.FormatInt(m.seq, 10)
		}
		t.report.Notes = append(t.report.Notes, fmt.Sprintf(
			"the prune and unprune markers at seq %s are not checked against a signature: no key is pinned or given", strings.Join(seqs, ", ")))
		return
	}
	keys := make([]string, len(t.trust.Verifiers))
	for i, v := range t.trust.Verifiers {
		keys[i] = v.Name()
	}
	for _, m := range markers {
		signed := slices.ContainsFunc(t.anchors, func(a *anchor) bool {
			return a.size == m.seq && a.state == matched && !a.weak && !a.isHead
		})
		if signed {
			continue
		}
		p := verify.Problem{Seq: m.seq, Kind: verify.KindCheckpoint, Detail: fmt.Sprintf(
			"the %s event at seq %d is signed by no key verify trusts (%s): no checkpoint of exactly %d events by one of them matches the log; "+
				"a prune or unprune is made only with the ledger's key, so this one was written without it (whoever could write the database), "+
				"or its checkpoint was deleted, or lockledger before prunes were signed wrote it; the events it removed or put back are vouched for by nothing "+
				"(give its archive with --archive: one that checks out vouches for it)",
			m.typ, m.seq, strings.Join(keys, ", "), m.seq)}
		t.report.Add(p)
		if m.typ == events.LedgerPruned {
			t.report.SetMarker(m.seq, p)
		}
	}
}
