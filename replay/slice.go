package replay

// An export may end, or start, where the heads it is checked against do
// not: a slice cut by --since/--until, an export taken before the head an
// auditor brings. What such a file proves is exactly this: its events are
// positions start+1..end of the log a head signs, when the tree line (the
// tree of the events before it) and its events hash to the head's root,
// directly (a head of a size inside it) or through a consistency proof
// from a size inside it to the head's (a head past its end). It proves
// nothing of the events it does not hold. A head the verifier gave
// (--checkpoint, --expect-head) must be reached so; verify fails naming
// the range it could not check.

import (
	"cmp"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/verify"
)

// lineProof is a consistency line as read, with its line number.
type lineProof struct {
	proof *exportProof
	line  int64
}

// sliceProof is a consistency proof a file carries, with the tree of its
// first from records once the pass reaches it.
type sliceProof struct {
	from, to int64
	hashes   tlog.TreeProof
	line     int64
	tree     *checkpoint.Tree // the tree at from (nil until reached)
}

// addProof lists a consistency line. Its tree is taken when the pass
// reaches its size: now, when that is the size already reached (the
// tree before the first event, or a stream's proof after its events).
func (t *treeCheck) addProof(p *exportProof, line int64) {
	sp := &sliceProof{from: p.From, to: p.To, hashes: p.Proof, line: line}
	t.proofs = append(t.proofs, sp)
	if p.From == t.tree.Size() && !t.off {
		cp := *t.tree
		sp.tree = &cp
	}
}

// reachProofs takes the tree of the proofs from the size just reached.
func (t *treeCheck) reachProofs(size int64) {
	for _, p := range t.proofs {
		if p.from == size && p.tree == nil && !t.off {
			cp := *t.tree
			p.tree = &cp
		}
	}
}

// proveBeyond matches a checkpoint past the end of the file through a
// consistency proof the file carries to its size (the largest such proof
// start, which proves the most events). It reports whether there was one.
func (t *treeCheck) proveBeyond(a *anchor) bool {
	var best *sliceProof
	for _, p := range t.proofs {
		if p.to == a.size && p.tree != nil && (best == nil || p.from > best.from) {
			best = p
		}
	}
	if best == nil {
		return false
	}
	if err := checkpoint.CheckSlice(best.tree, tlog.Tree{N: a.size, Hash: a.root}, best.hashes); err != nil {
		a.state = mismatched
		a.detail = fmt.Sprintf("the consistency proof of line %d does not lead from the first %d events to the checkpoint's root: %v",
			best.line, best.from, err)
		return true
	}
	a.via = best.from
	t.matched(a)
	return true
}

// headAtStart checks an expected head of the seq just before a file's
// first event against that event's prev_hash, which the chain holds to
// be the hash of the event before it.
func (t *treeCheck) headAtStart(firstSeq int64, prevHash string) {
	t.first = firstSeq
	for _, a := range t.anchors {
		if !a.isHead || a.size != firstSeq-1 || a.state != pending {
			continue
		}
		if prevHash == a.hash {
			t.matched(a)
		} else {
			a.state = mismatched
			a.detail = fmt.Sprintf("seq %d's hash is %s (the prev_hash of seq %d)", a.size, prevHash, firstSeq)
		}
	}
}

// firstSeq is the file's first event's seq (the one after its tree line,
// before any is read).
func (t *treeCheck) firstSeq() int64 { return cmp.Or(t.first, t.start+1) }

// unreached reports a head the verifier gave that the file does not
// reach: before its first event, or past its last without a proof.
func (t *treeCheck) unreached(a *anchor, end int64) {
	a.result.Result = "not reached"
	first := t.firstSeq()
	var detail string
	switch {
	case end == 0:
		detail = fmt.Sprintf("%s cannot be checked: the file holds no event", a.name)
	case a.size < first-1:
		detail = fmt.Sprintf("%s covers seq 1-%d, but the file starts at seq %d: seq %d-%d are not in it, so it cannot be checked against the head",
			a.name, a.size, first, a.size, first-1)
		if a.isHead {
			detail = fmt.Sprintf("%s names seq %d, but the file starts at seq %d: seq %d-%d are not in it, so it cannot be checked against the head",
				a.name, a.size, first, a.size, first-1)
		}
	case a.isHead:
		detail = fmt.Sprintf("%s names seq %d, but the file ends at seq %d: seq %d-%d are missing (cut, or exported before that head)",
			a.name, a.size, end, end+1, a.size)
	case t.noTree:
		detail = fmt.Sprintf("%s cannot be checked: the file starts at seq %d without the tree of the events before it (a tree line), so no root can be computed",
			a.name, first)
	default:
		detail = fmt.Sprintf("%s covers %d events but the file ends at seq %d, and carries no consistency proof from it to size %d: seq %d-%d are missing (cut, or exported before that head)",
			a.name, a.size, end, a.size, end+1, a.size)
	}
	seq := end + 1
	if a.size < first-1 || t.noTree {
		seq = first
	}
	t.report.Add(verify.Problem{Seq: seq, Kind: verify.KindCheckpoint, Detail: detail})
}

// sliceTrust says what a file that starts after seq 1 proves: its events
// up to covered are in the log of the head named, and nothing of the
// events before it.
func (t *treeCheck) sliceTrust(covered, end int64, by *anchor, heads int) string {
	first := t.firstSeq()
	how := fmt.Sprintf("with the tree of seq 1-%d the file carries, they hash to its root", first-1)
	switch {
	case by.isHead:
		how = "the chain from the file's first prev_hash reaches its hash"
	case by.via > 0 && by.via < by.size:
		how += fmt.Sprintf(" through the consistency proof from size %d to %d", by.via, by.size)
	}
	s := fmt.Sprintf("seq %d-%d are events %d-%d of the log %s signs (%s); the events before seq %d are not in the file, and nothing here vouches for them",
		first, covered, first, covered, by.name, how, first)
	if heads > 1 {
		s += fmt.Sprintf(" (%d heads match in all)", heads)
	}
	if covered < end {
		s += fmt.Sprintf("; seq %d-%d are covered by no checkpoint checked: nothing vouches for them yet", covered+1, end)
	}
	return s
}
