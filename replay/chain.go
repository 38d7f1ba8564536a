package replay

import (
	"github.com/lockledger/lockledger/store"
	"github.com/lockledger/lockledger/verify"

	"fmt"
	"strings"
)

// Row is one event as stored in the events table or in an export line.
type Row struct {
	Seq      int64 // the position: the seq column, or the export line's seq
	PrevHash string
	Hash     string
	Body     []byte   // the exact hashed bytes
	Cols     *Columns // the indexed columns; nil for an export line
	Line     int64    // export files: the line number
	// Stored is the event's row of stored Merkle hashes (table
	// tlog_hashes), nil when it has none; always nil for an export line.
	Stored []byte
}

// Columns are the events table's columns that duplicate body fields for the indexes.
type Columns = store.Columns

// chain classifies damage to a hash chain in one streaming pass, with
// memory bounded by a few counters and at most maxSpans ranges.
//
// How damage is told apart. Every row carries its own position p (the seq
// column) and, inside the hashed body, the seq it was written with. hash =
// ChainHash(seq, prev_hash, body), so:
//
//   - a row whose hash matches (p, prev_hash, body) is intact in place;
//   - a row whose hash matches (body seq, prev_hash, body) but not p is
//     intact but moved: renumbered by a deletion, an insertion or a swap;
//     its body seq is its original seq o;
//   - a row whose hash matches neither was modified (its body, prev_hash
//     or hash changed). It is assumed to sit where it belongs, and its hash
//     column is taken as the chain tip, so that an untouched successor
//     (which chains from the original hash) adds no second finding.
//
// Intact rows are then read as a sequence of original seqs o, against the
// highest one seen so far (maxO, held by the "tip" row):
//
//   - o == maxO+1: normal progress. Its prev_hash must equal the tip's
//     hash. If not, and the tip was intact, either the tip was rewritten
//     with a recomputed hash (its successor still names the old hash) or
//     this row was forged with a bad link. Decided by the next row: if
//     there is one, the tip was modified (an attacker who inserts in place
//     must renumber, which the moved-row rules see); if this is the last
//     row, it was inserted (appended by something other than the ledger,
//     which always links to the head). The two are indistinguishable for
//     the last two rows: documented, not guessed further. A moved row here
//     must directly follow the previous row's position (its shift then
//     comes from a finding before it); otherwise, or as the first row, it
//     was renumbered with nothing else to explain it (e.g. a whole export
//     relabelled): "renumbered".
//   - o > maxO+1: original seqs maxO+1..o-1 are missing here: deleted (a
//     gap, or renumbered to close one). Seq names the first position they
//     should hold. The range is remembered (up to maxSpans ranges): if one
//     of them shows up later, the finding becomes "reordered".
//   - o <= maxO and o in a remembered range: reordered (see above).
//   - o <= maxO otherwise: a second row claims an original seq already
//     seen. The earlier claimant(s) were inserted: an attacker inserting in
//     the middle must shift the later rows up, and those keep their
//     original body seq. The chain continues from this row.
//
// A rewrite that recomputes every later hash too leaves a chain that is
// consistent by construction: only a head recorded elsewhere (signed
// checkpoints, planned) or the projection check can expose it; the same
// holds for truncation of the tail.
type chain struct {
	// anchor is the prev_hash the first row must carry: the genesis for a
	// ledger, an optional given hash for an export slice; "" takes the
	// first row's prev_hash as given.
	anchor string
	// fromStart: the first row must be seq 1 (a whole ledger).
	fromStart bool
	// after: the rows follow this seq, whose hash is the anchor (a ledger
	// checked from a head verified before): the first must be after+1.
	after  int64
	report *verify.Report

	started    bool
	tipAnchor  bool   // the tip is the anchor, not a row
	maxO       int64  // highest original seq seen on an intact row
	tipHash    string // hash column of the row holding maxO
	tipPos     int64  // its position
	tipDamaged bool   // the tip row was modified (its hash column is not to be trusted)
	dupRun     int64  // original seq of the last duplicate, to report a run once
	lastPos    int64  // the previous row's position
	spans      []span
	pending    *pendingLink
	last       *verify.Problem // the last finding, to report each (seq, kind) once
	damaged    bool            // any finding at all
}

type span struct {
	from, to int64 // original seqs [from, to) missing at the time
	problem  int   // index in report.Problems, -1 if not listed
}

// pendingLink is an intact in-place row that does not chain from the tip.
type pendingLink struct {
	pos, o, predPos int64
	line            int64
}

const maxSpans = 64

func newChain(anchor string, fromStart bool, r *verify.Report) *chain {
	return &chain{anchor: anchor, fromStart: fromStart, report: r}
}

func (c *chain) add(p verify.Problem) int {
	if c.last != nil && c.last.Seq == p.Seq && c.last.Kind == p.Kind {
		return -1 // one finding per seq and kind
	}
	c.last = &p
	c.damaged = true
	listed := len(c.report.Problems) < verify.MaxProblems
	c.report.Add(p)
	if listed && (p.Kind == verify.KindReordered || p.Kind == verify.KindDeleted) {
		return len(c.report.Problems) - 1
	}
	return -1
}

// step takes the next row in position order, with its precomputed hash
// checks (see rowCheck). It reports whether the row is intact (its hash
// matches its own content).
func (c *chain) step(rc *rowCheck) (intact bool) {
	r := rc.row
	bseqOK := rc.derr == nil
	var bseq int64
	if bseqOK {
		bseq = rc.ev.Seq
	}
	p := r.Seq
	first := !c.started
	if first {
		c.started = true
		c.report.FirstSeq, c.report.FirstPrevHash = p, r.PrevHash
		if c.fromStart || c.after > 0 {
			c.maxO, c.tipPos = c.after, c.after
		} else {
			o := p
			if bseqOK {
				o = bseq
			}
			c.maxO, c.tipPos = o-1, p-1
		}
		c.tipHash, c.tipAnchor = c.anchor, true
		if c.anchor == "" {
			c.tipHash = r.PrevHash
		}
	}
	c.report.Events++
	c.report.LastSeq, c.report.HeadHash = p, r.Hash
	prevPos := c.lastPos
	c.lastPos = p

	var o int64
	intact = true
	switch {
	case rc.selfOK:
		o = p
		if bseqOK && bseq != p {
			c.add(verify.Problem{Seq: p, Line: r.Line, Kind: verify.KindColumnMismatch,
				Detail: fmt.Sprintf("seq column is %d but the body says %d, and the hash was computed for %d", p, bseq, p)})
		}
	case rc.movedOK:
		o = bseq // intact, moved
	default:
		intact = false
		o = p + (c.maxO - c.tipPos) // assume it sits where the current run puts it
	}

	if c.pending != nil {
		pl := c.pending
		c.pending = nil
		if !(o <= c.maxO && o == pl.o) {
			c.add(verify.Problem{Seq: pl.predPos, Kind: verify.KindModified, Detail: fmt.Sprintf(
				"rewritten with a recomputed hash: seq %d's prev_hash no longer matches its hash", pl.pos)})
		}
		// else: this row is a second claimant of pl.o, handled below as an insertion at pl.pos
	}

	if !intact {
		detail := "hash does not match seq, prev_hash and body: the body, prev_hash or hash was changed"
		if !bseqOK {
			detail += " (the body is not a readable event)"
		}
		pr := verify.Problem{Seq: p, Line: r.Line, Kind: verify.KindModified, Detail: detail}
		if rc.ev != nil {
			pr.Lock = rc.ev.LockName // what the body now says, for orientation
		}
		c.add(pr)
	}

	switch {
	case o == c.maxO+1:
		c.dupRun = 0
		if rc.movedOK && (first || p != prevPos+1) {
			c.add(verify.Problem{Seq: p, Line: r.Line, Kind: verify.KindRenumbered, Detail: fmt.Sprintf(
				"seq %d holds the event written as seq %d (its hash covers %d, as its body says), with no deletion, insertion or reordering to explain it",
				p, o, o)})
		}
		if intact && !c.tipDamaged && r.PrevHash != c.tipHash {
			if c.tipAnchor {
				what := "the given prev hash"
				if c.after > 0 {
					what = fmt.Sprintf("seq %d, the head verified before", c.after)
				}
				if c.fromStart {
					what = "this ledger's genesis (the first event was replaced, or meta ledger_id changed)"
				}
				c.add(verify.Problem{Seq: p, Line: r.Line, Kind: verify.KindModified, Detail: "does not chain from " + what})
			} else {
				c.pending = &pendingLink{pos: p, o: o, predPos: c.tipPos, line: r.Line}
			}
		}
		c.advance(o, r, intact)
	case o > c.maxO+1:
		c.dupRun = 0
		first, last := c.maxO+1, o-1
		detail := fmt.Sprintf("event seq %d is missing", first)
		if last > first {
			detail = fmt.Sprintf("events seq %d-%d are missing (%d events)", first, last, last-first+1)
		}
		if p != o {
			detail += fmt.Sprintf("; later rows were renumbered to close the gap (position %d holds seq %d)", p, o)
		}
		idx := c.add(verify.Problem{Seq: c.tipPos + 1, Line: r.Line, Kind: verify.KindDeleted, Detail: detail})
		if len(c.spans) < maxSpans {
			c.spans = append(c.spans, span{from: first, to: o, problem: idx})
		}
		c.advance(o, r, intact)
	default: // o <= maxO
		for i := range c.spans {
			s := &c.spans[i]
			if o >= s.from && o < s.to {
				c.dupRun = 0
				if s.problem >= 0 && c.report.Problems[s.problem].Kind == verify.KindDeleted {
					pr := &c.report.Problems[s.problem]
					pr.Kind = verify.KindReordered
					pr.Detail = fmt.Sprintf("rows out of order: seq %d is at position %d, after seq %d", o, p, c.maxO)
				}
				return intact
			}
		}
		if c.dupRun == 0 || o != c.dupRun+1 {
			first := c.tipPos - (c.maxO - o)
			c.add(verify.Problem{Seq: first, Kind: verify.KindInserted, Detail: fmt.Sprintf(
				"a row not in the original chain: position %d holds the original seq %d, shifted up by the insertion", p, o)})
		}
		c.dupRun = o
		if o == c.maxO && intact {
			// The chain continues from the original, not from the inserted row.
			c.tipHash, c.tipPos, c.tipDamaged, c.tipAnchor = r.Hash, p, false, false
		}
	}
	return intact
}

func (c *chain) advance(o int64, r *Row, intact bool) {
	c.maxO, c.tipHash, c.tipPos, c.tipDamaged, c.tipAnchor = o, r.Hash, r.Seq, !intact, false
}

// end resolves a link break at the last row.
func (c *chain) end() {
	if pl := c.pending; pl != nil {
		c.pending = nil
		c.add(verify.Problem{Seq: pl.pos, Line: pl.line, Kind: verify.KindInserted, Detail: fmt.Sprintf(
			"the last event does not chain from seq %d: appended by something other than the ledger (or seq %d was rewritten with a recomputed hash)",
			pl.predPos, pl.predPos)})
	}
}

// checkColumns compares the indexed columns with the body.
func checkColumns(r *Row, ev *Event) *verify.Problem {
	if r.Cols == nil || ev == nil {
		return nil
	}
	var bad []string
	cmp := func(name, col, body string) {
		if col != body {
			bad = append(bad, fmt.Sprintf("%s column %q, body %q", name, col, body))
		}
	}
	cmp("event_id", r.Cols.EventID, ev.EventID)
	cmp("type", r.Cols.Type, string(ev.Type))
	cmp("lock_name", r.Cols.LockName, ev.LockName)
	cmp("request_id", r.Cols.RequestID, ev.RequestID)
	cmp("actor", r.Cols.Actor, ev.Actor)
	cmp("at", r.Cols.At, ev.At)
	if len(bad) == 0 {
		return nil
	}
	return &verify.Problem{Seq: r.Seq, Kind: verify.KindColumnMismatch, Lock: ev.LockName, Detail: strings.Join(bad, "; ")}
}
