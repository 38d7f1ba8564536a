package replay

// What verify checks beyond the chain: the Merkle tree's stored hashes
// against the events, and the log against heads recorded elsewhere
// (signed checkpoints, expected chain heads). The chain proves order, not
// authorship: a rewrite with recomputed hashes, a truncated tail or
// another ledger's database all verify as chains. Only a head recorded
// outside the writer's reach exposes them.

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/verify"
)

// NoteSource is a signed checkpoint as found: where (a file and line, a
// witness file, the ledger's checkpoints table) and its signed note.
type NoteSource struct {
	Source  string // how verify names it: "checkpoint FILE:LINE", "ledger checkpoint #ID"
	Note    []byte
	Witness string // the --witness path it was read from, if any
	// Carried: kept by the ledger or the export itself, so its writer
	// could have left it out (never by someone without the key, edited).
	Carried bool
	// Row: a row of the ledger's checkpoints table, which claims Size.
	Row  bool
	Size int64
	// Given: the verifier brought it (--checkpoint): the log must reach
	// it, or verify fails naming the range it could not check.
	Given bool
}

// Head is a chain head recorded elsewhere: event Seq's hash.
type Head struct {
	Seq  int64
	Hash string
}

// Trust is what verify checks the log against beyond its own chain.
type Trust struct {
	// LedgerID is the ledger the checkpoints must name ("" for an export:
	// the checkpoints' own, which must agree).
	LedgerID    string
	Checkpoints []NoteSource
	Verifiers   []note.Verifier
	Heads       []Head
	// Expected: the caller asked to check against checkpoints (gave
	// verifier keys): finding none is a problem.
	Expected bool
	// Witnesses name the witness paths read: one that holds no checkpoint
	// of this ledger is a problem.
	Witnesses map[string]int // path -> checkpoints of this ledger found in it
	// Cosigners are the keys of witnesses off the machine whose
	// cosignatures (Cosignatures: notes of the checkpoint text and the
	// witness's cosignature line) are checked; Quorum of them (0: all)
	// must have cosigned the newest checkpoint any of them cosigned.
	Cosigners    []note.Verifier
	Quorum       int
	Cosignatures []NoteSource
	// OthersUnchecked: a checkpoint signed only by keys not given is not
	// checked (it vouches for nothing) rather than damage: the keys are
	// the ones a trust store pinned, not all the ledger's signers.
	OthersUnchecked bool
	// Revoked: keys (checkpoint.KeyID) removed from the ledger's signers
	// at a seq; their checkpoints of that many events or more vouch for
	// nothing (see WithSigners).
	Revoked map[string]int64
}

// WithTrust checks the log against t's checkpoints and heads.
func WithTrust(t *Trust) VerifyOption { return func(c *verifyConfig) { c.trust = t } }

// anchor is a head to match at a size: a checkpoint's root or a chain hash.
type anchor struct {
	name    string // how problems name it
	size    int64
	root    tlog.Hash // checkpoints
	hash    string    // heads
	isHead  bool
	carried bool
	time    time.Time
	every   int64                    // the signer's promise: the next checkpoint within every events
	within  time.Duration            // or the first event dated within after time
	result  *verify.CheckpointResult // a head's is in no report
	state   int                      // pending, matched, mismatched, beyond
	detail  string
	// weak: a carried checkpoint whose signature no key checked. It vouches
	// for nothing, but a log it does not match, or that ends before it,
	// was rewritten or the checkpoint forged: either is damage.
	weak bool
	// split: a witness cosigned it, so a log it does not match is a split
	// view.
	split bool
	given bool  // NoteSource.Given, or an expected head
	via   int64 // matched past a file's end through a consistency proof from this size
}

const (
	pending = iota
	matched
	mismatched
	beyond
	unreached // a given head a file does not reach (see slice.go)
)

// treeCheck runs in verify's ordered stage: it rebuilds the Merkle tree
// from the events' leaves (computed beside the reads), compares each
// event's stored hashes with it, and matches the anchors as their sizes
// are reached.
type treeCheck struct {
	report  *verify.Report
	tree    *checkpoint.Tree
	start   int64 // records before the first row (a slice with a frontier)
	ledger  bool  // rows carry stored hashes
	off     bool  // positions stopped following seq: no more stored-hash checks
	merkle  *verify.Problem
	merkleN int64
	anchors []*anchor // by size
	next    int       // first anchor not reached
	latest  *anchor   // the largest head matched so far
	// promise: the largest checkpoint matched that carries the writer's
	// promise. A checkpoint signed by hand carries none, and must not
	// lift the promise of the writers before it: later events are held to
	// this promise, counted from latest (the writers count from the last
	// checkpoint of any kind).
	promise *anchor
	// slack is how far a clock may step back or run ahead (ClockSkew):
	// the tolerance of the backdate and promise checks.
	slack    time.Duration
	backdate *verify.Problem
	unkept   *verify.Problem  // the first event past latest's promise, until a head covers it
	invalid  []verify.Problem // checkpoints whose signature or text fails
	trust    *Trust
	rows     int64
	origin   string
	cosigned []cosigned
	proofs   []*sliceProof       // consistency proofs a file carries
	heads    map[int64][]*anchor // expected heads by seq
	first    int64               // the first row's seq
	// noTree: a file that starts after seq 1 without the tree before it:
	// no root can be computed, only chain heads matched.
	noTree bool
}

func newTreeCheck(r *verify.Report, ledgerRows bool, cfg verifyConfig) *treeCheck {
	t := &treeCheck{report: r, tree: &checkpoint.Tree{}, ledger: ledgerRows, trust: cfg.trust, slack: cfg.clockSkew}
	if cfg.trust != nil {
		t.prepare()
	}
	return t
}

// startAt seeds the tree for a slice: the frontier of the records before it.
func (t *treeCheck) startAt(n int64, frontier []tlog.Hash) error {
	tr, err := checkpoint.NewTreeAt(n, frontier)
	if err != nil {
		return err
	}
	t.tree, t.start = tr, n
	return nil
}

// prepare opens every checkpoint (signature, text, origin) and lists the
// anchors to match.
func (t *treeCheck) prepare() {
	tr := t.trust
	origin := ""
	if tr.LedgerID != "" {
		origin = checkpoint.Origin(tr.LedgerID)
	}
	for _, ns := range tr.Checkpoints {
		t.prepareNote(ns, &origin)
	}
	t.origin = t.prepareCosignatures(origin)
	t.heads = map[int64][]*anchor{}
	for _, h := range tr.Heads {
		a := &anchor{name: fmt.Sprintf("expected head %d:%s", h.Seq, h.Hash), size: h.Seq, hash: h.Hash, isHead: true, given: true,
			result: &verify.CheckpointResult{}}
		t.anchors = append(t.anchors, a)
		t.heads[h.Seq] = append(t.heads[h.Seq], a)
	}
	sort.SliceStable(t.anchors, func(i, j int) bool { return t.anchors[i].size < t.anchors[j].size })
	for _, w := range slices.Sorted(maps.Keys(tr.Witnesses)) {
		if tr.Witnesses[w] == 0 {
			t.report.Add(verify.Problem{Seq: 1, Kind: verify.KindCheckpoint, Detail: fmt.Sprintf(
				"the witness %s holds no valid checkpoint of this ledger (%s): it was emptied, or this is another ledger's database", w, origin)})
		}
	}
}

// prepareNote opens one checkpoint (signature, text, origin, which it
// sets from the first when the trust names none) and lists it as an
// anchor to match, which it returns (nil when there is none to match).
func (t *treeCheck) prepareNote(ns NoteSource, origin *string) *anchor {
	tr := t.trust
	res := &verify.CheckpointResult{Source: ns.Source, Carried: ns.Carried}
	t.report.Checkpoints = append(t.report.Checkpoints, res)
	u, uerr := checkpoint.Open(ns.Note) // its signatures unchecked
	if uerr == nil {
		res.Size, res.Key, res.Time = u.Size, u.KeyName(), u.Time
	}
	if len(tr.Verifiers) == 0 {
		res.Result, res.Detail = "not checked", "no --verifier-key"
		if ns.Row {
			*origin = t.rowUnchecked(ns, res, u, uerr, *origin)
		}
		return nil
	}
	s, err := checkpoint.Open(ns.Note, tr.Verifiers...)
	if err != nil {
		res.Result, res.Detail = "invalid", err.Error()
		var se *checkpoint.SignatureError
		if errors.As(err, &se) && !se.Invalid && tr.OthersUnchecked {
			res.Result, res.Detail = "not checked", "signed by "+strings.Join(se.Signers, ", ")+", no key pinned in the trust store"
			// A witness holding this ledger's checkpoints by a key no pin
			// names (a head kept for another root's key) was not emptied.
			if uerr == nil && ns.Witness != "" && tr.Witnesses != nil && (*origin == "" || u.Origin == *origin) {
				tr.Witnesses[ns.Witness]++
			}
			return nil
		}
		what := "is not a checkpoint"
		if errors.As(err, &se) {
			what = "is not vouched for"
			if se.Invalid {
				what = "was changed after it was signed"
			}
		}
		// Its seq is known at the end: the first one no valid head covers.
		t.invalid = append(t.invalid, verify.Problem{Kind: verify.KindCheckpoint, Detail: fmt.Sprintf("%s %s: %v", describe(res), what, err)})
		return nil
	}
	res.Key = s.KeyName() // the first key that verifies
	if r, ok := tr.revoked(s); ok {
		res.Result, res.Detail = "not checked", fmt.Sprintf("its key was removed from the ledger's signers at seq %d, and it covers %d events", r, s.Size)
		return nil
	}
	if ns.Row && ns.Size != s.Size {
		t.rowSizeDiffers(ns, res, s)
		return nil
	}
	*origin = cmp.Or(*origin, s.Origin)
	if s.Origin != *origin && ns.Witness != "" {
		// A witness may keep the checkpoints of several ledgers: the
		// others' are not this one's to check. A witness holding none of
		// this ledger's is a problem of its own (below).
		res.Result = "not checked"
		res.Detail = fmt.Sprintf("a checkpoint of another ledger (%s, this log is %s)", s.Origin, *origin)
		return nil
	}
	if s.Origin != *origin {
		t.otherLedger(res, s.Origin, *origin)
		return nil
	}
	if ns.Witness != "" && tr.Witnesses != nil {
		tr.Witnesses[ns.Witness]++
	}
	a := &anchor{name: describe(res), carried: ns.Carried, size: s.Size, root: s.Root, time: s.Time,
		every: s.NextEvery, within: s.NextWithin, result: res, given: ns.Given}
	t.anchors = append(t.anchors, a)
	return a
}

// otherLedger reports a checkpoint of another ledger than the log's.
func (t *treeCheck) otherLedger(res *verify.CheckpointResult, its, origin string) {
	res.Result = "invalid"
	res.Detail = fmt.Sprintf("it is a checkpoint of %q, not of %q", its, origin)
	t.report.Add(verify.Problem{Seq: 1, Kind: verify.KindCheckpoint, Detail: fmt.Sprintf(
		"%s names another ledger (%s, this log is %s): the database was swapped for another ledger's, or the checkpoint is another ledger's",
		describe(res), its, origin)})
}

func describe(r *verify.CheckpointResult) string {
	s := r.Source
	var about []string
	if r.Size > 0 {
		about = append(about, fmt.Sprintf("size %d", r.Size))
	}
	if r.Key != "" {
		about = append(about, "key "+r.Key)
	}
	if len(about) > 0 {
		s += " (" + strings.Join(about, ", ") + ")"
	}
	return s
}

// step takes the next row in position order, with its leaf computed.
func (t *treeCheck) step(rc *rowCheck) {
	r := rc.row
	if t.rows == 0 {
		t.noTree = !t.ledger && r.Seq > 1 && t.start == 0
		t.headAtStart(r.Seq, r.PrevHash)
		// A slice's frontier is the tree at its start: a checkpoint of
		// exactly that size is checked against it; smaller ones cannot be.
		for t.next < len(t.anchors) && t.anchors[t.next].size <= t.start {
			if a := t.anchors[t.next]; a.size == t.start && a.size > 0 && !a.isHead {
				t.matchRoot(a)
			}
			t.next++
		}
	}
	t.rows++
	pos := t.start + t.rows // 1-based position in the tree
	if r.Seq != pos {
		t.off = true // a gap or renumbering: the chain reports it
	}
	for _, a := range t.heads[r.Seq] {
		if a.state != pending {
			continue
		}
		if r.Hash == a.hash {
			t.matched(a)
		} else {
			a.state = mismatched
			a.detail = fmt.Sprintf("seq %d's hash is %s", a.size, r.Hash)
		}
	}
	hs, err := t.tree.Append(rc.leaf)
	if err != nil {
		t.off = true
	}
	if t.ledger && !t.off {
		t.compareStored(r, hs)
	}
	if len(t.proofs) > 0 {
		t.reachProofs(pos)
	}
	if a := t.latest; a != nil && rc.ev != nil && !rc.ev.Time.IsZero() && !a.time.IsZero() {
		if t.backdate == nil && rc.ev.Time.Before(a.time.Add(-t.slack)) {
			t.backdate = &verify.Problem{Seq: r.Seq, Line: r.Line, Kind: verify.KindCheckpoint, Lock: rc.ev.LockName, Detail: fmt.Sprintf(
				"dated %s, before %s was signed (%s) although the checkpoint covers only seq 1-%d: appended after it and dated back",
				rc.ev.At, a.name, a.time.Format(time.RFC3339Nano), a.size)}
		}
		if p := t.promise; p != nil && t.unkept == nil && !isRead(rc.ev.Type) {
			late := p.within > 0 && rc.ev.Time.After(a.time.Add(p.within+t.slack))
			if pos-a.size >= p.every || late {
				signed := fmt.Sprintf("the writer that signed %s (at %s)", a.name, a.time.Format(time.RFC3339Nano))
				if p != a {
					signed = fmt.Sprintf("the writer that signed %s (at %s), whose promise %s (signed without one) leaves standing,",
						p.name, p.time.Format(time.RFC3339Nano), a.name)
				}
				t.unkept = &verify.Problem{Seq: r.Seq, Line: r.Line, Kind: verify.KindCheckpoint, Lock: rc.ev.LockName, Detail: fmt.Sprintf(
					"covered by no checkpoint, although %s signs the next one within %d events or with the first event dated %s later, and this is event %d after %s, dated %s: appended by a writer without the key (or with a longer --checkpoint-every or --checkpoint-interval)",
					signed, p.every, p.within, pos-a.size, a.name, rc.ev.At)}
			}
		}
	}
	for t.next < len(t.anchors) && t.anchors[t.next].size <= pos {
		a := t.anchors[t.next]
		t.next++
		if a.isHead || t.noTree {
			continue // heads are matched by seq, above
		}
		t.matchRoot(a)
	}
}

// isRead: an event that records a read of the log (verify, export). A
// reader holds the verifier key, not the signing key, so it cannot keep a
// signer's promise of its next checkpoint: reads are not held to it (they
// change no lock, and stay uncovered until the next signed write covers
// them). Every other event is, whatever reads came before it: the writer
// that appends it signs the checkpoint then due, counting the reads too.
func isRead(typ events.Type) bool {
	return typ == events.LedgerVerified || typ == events.LedgerExported
}

func (t *treeCheck) matchRoot(a *anchor) {
	if a.size != t.tree.Size() {
		return
	}
	h, err := t.tree.Root()
	switch {
	case err != nil:
		a.state, a.detail = mismatched, err.Error()
	case h == a.root:
		t.matched(a)
	default:
		a.state, a.detail = mismatched, fmt.Sprintf("the first %d events hash to %s, the checkpoint's root is %s", a.size, h, a.root)
	}
}

// matched records a head that matches: it covers every event up to its
// size, and later events are held to its promise.
func (t *treeCheck) matched(a *anchor) {
	a.state = matched
	if a.weak {
		return
	}
	// Of heads of one size, name one from outside the log rather than one
	// it carries.
	if l := t.latest; l == nil || a.size > l.size || (a.size == l.size && l.carried && !a.carried) {
		t.latest = a
	}
	if p := t.promise; a.every > 0 && (p == nil || a.size > p.size || (a.size == p.size && p.carried && !a.carried)) {
		t.promise = a
	}
	if t.unkept != nil && a.size >= t.unkept.Seq {
		t.unkept = nil
	}
}

func (t *treeCheck) compareStored(r *Row, want []tlog.Hash) {
	if len(r.Stored) == len(want)*tlog.HashSize {
		same := true
		for i := range want {
			same = same && bytes.Equal(r.Stored[i*tlog.HashSize:(i+1)*tlog.HashSize], want[i][:])
		}
		if same {
			return
		}
	}
	t.merkleN++
	if t.merkle != nil {
		return
	}
	detail := "its stored Merkle hashes (table tlog_hashes) are not the ones its body and the events before it make: the table was edited, or the event was rewritten without them"
	switch {
	case r.Stored == nil:
		detail = "it has no stored Merkle hashes (table tlog_hashes): appended by something other than lockledger, or the row was deleted"
	case len(r.Stored) != len(want)*tlog.HashSize:
		detail = fmt.Sprintf("its stored Merkle hashes hold %d bytes, not %d", len(r.Stored), len(want)*tlog.HashSize)
	}
	t.merkle = &verify.Problem{Seq: r.Seq, Kind: verify.KindMerkle, Detail: detail}
}

// extraStored records stored hash rows beyond the last event: left behind
// by events that are gone (a truncated tail).
func (t *treeCheck) extraStored(n, first int64) {
	if n == 0 {
		return
	}
	t.merkleN += n
	if t.merkle == nil {
		t.merkle = &verify.Problem{Seq: first, Kind: verify.KindMerkle, Detail: fmt.Sprintf(
			"stored Merkle hashes remain for %d events from seq %d that are not in the log: events were deleted from its end", n, first)}
	}
}

// end reports what the pass found, once the chain's findings are known.
func (t *treeCheck) end(chainDamaged bool, firstChainSeq int64) {
	end := t.start + t.rows
	t.resolve(end)
	if p := t.merkle; p != nil && (!chainDamaged || p.Seq < firstChainSeq) {
		if t.merkleN > 1 {
			p.Detail += fmt.Sprintf(" (and %d more events' hashes disagree)", t.merkleN-1)
		}
		t.report.Add(*p)
	}
	if t.backdate != nil {
		t.report.Add(*t.backdate)
	}
	if t.unkept != nil {
		t.report.Add(*t.unkept)
	}
	if t.trust == nil {
		t.report.Trust = verify.Unsigned
		return
	}
	good := int64(0)
	var goodName string
	var goodAnchor *anchor
	strong := 0
	for _, a := range t.anchors {
		if !a.weak {
			strong++
		}
		if a.state == matched && !a.weak && a.size > good {
			good, goodName, goodAnchor = a.size, a.name, a
		}
	}
	first := max(t.first, 1)
	for _, p := range t.invalid {
		p.Seq = max(good+1, first)
		p.Detail += fmt.Sprintf("; nothing vouches for the events from seq %d", good+1)
		if goodName != "" {
			p.Detail += fmt.Sprintf(" (the first %d match %s)", good, goodName)
		}
		t.report.Add(p)
	}
	nChecked := 0
	for _, a := range t.anchors {
		lower, lowerName := int64(0), ""
		for _, b := range t.anchors {
			if b.state == matched && b.size < a.size && b.size > lower {
				lower, lowerName = b.size, b.name
			}
		}
		since := "none of them matches a head that was checked"
		if lowerName != "" {
			since = fmt.Sprintf("the first %d match %s", lower, lowerName)
		}
		switch a.state {
		case matched:
			if a.weak {
				break
			}
			nChecked++
			a.result.Result = "matches"
		case mismatched:
			a.result.Result, a.result.Detail = "does not match", a.detail
			fork := ""
			if good > a.size {
				fork = fmt.Sprintf("; yet the log matches the larger %s: two different logs were signed", goodName)
			}
			if a.split {
				fork += "; a split view: the witness was shown another log than this one"
			}
			t.report.Add(verify.Problem{Seq: max(lower+1, first), Kind: verify.KindCheckpoint, Detail: fmt.Sprintf(
				"the log no longer matches %s%s: %s; a change lies in seq %d-%d (%s)%s",
				a.name, a.unchecked(), a.detail, lower+1, a.size, since, fork)})
		case unreached:
			t.unreached(a, t.report.LastSeq)
		case beyond:
			a.result.Result = "beyond the log"
			t.report.Add(verify.Problem{Seq: end + 1, Kind: verify.KindCheckpoint, Detail: fmt.Sprintf(
				"%s%s covers %d events but the log holds %d: events from seq %d were removed (truncated)",
				a.name, a.unchecked(), a.size, end, end+1)})
		default:
			// Below the start of a slice, or past the end of an export:
			// neither matched nor not.
			a.result.Result, a.result.Detail = "not checked", "it ends before the slice starts"
			switch {
			case t.ledger && t.start > 0 && a.size <= t.start:
				a.result.Detail = "it covers no event after the head verified before, which a verify checked"
			case t.noTree:
				a.result.Detail = "the file starts after seq 1 without the tree of the events before it"
			case a.size > end:
				a.result.Detail = "it covers events past the end of the export, which carries no consistency proof to it"
			}
		}
	}
	t.endCosignatures(end)
	switch {
	case nChecked == 0 && strong == 0 && t.trust.Expected && end > 0:
		detail := "no checkpoint of this log was found to check it against: nothing vouches for it"
		if first > 1 {
			detail = fmt.Sprintf("no checkpoint that reaches the file's events (seq %d-%d) was found to check them against: nothing vouches for them", first, t.report.LastSeq)
		}
		t.report.Add(verify.Problem{Seq: first, Kind: verify.KindCheckpoint, Detail: detail})
		t.report.Trust = verify.Unsigned
	case nChecked == 0:
		t.report.Trust = verify.Unsigned
		if strong > 0 {
			t.report.Trust = "not vouched for: no checkpoint or expected head matches the log"
		}
	case !t.ledger && (first > 1 || goodAnchor.via > 0):
		covered := min(good, t.report.LastSeq)
		if covered < first {
			t.report.Trust = fmt.Sprintf("not vouched for: the heads that match (%s) end before the file's first event, seq %d", goodName, first)
			t.report.UnsignedFrom = first
			break
		}
		if covered < t.report.LastSeq {
			t.report.UnsignedFrom = covered + 1
		}
		by := goodAnchor
		if l := t.latest; l != nil && l.size == good {
			by = l // of heads of one size, one from outside the file
		}
		t.report.Trust = t.sliceTrust(covered, t.report.LastSeq, by, nChecked)
	default:
		t.report.Trust = fmt.Sprintf("seq 1-%d match %s", good, goodName)
		if nChecked > 1 {
			t.report.Trust += fmt.Sprintf(" (%d heads match in all)", nChecked)
		}
		if good < end {
			t.report.UnsignedFrom = good + 1
			t.report.Trust += fmt.Sprintf("; seq %d-%d are covered by no checkpoint checked: nothing vouches for them yet", good+1, end)
		}
	}
}

// resolve settles the anchors the pass did not reach: a head past a
// file's end through a consistency proof, or as unreached when the
// verifier gave it; any anchor past a ledger's end, or one a file carries,
// is beyond the log (cut); an expected head whose seq the log does not
// hold does not match.
func (t *treeCheck) resolve(end int64) {
	last := t.report.LastSeq
	if t.noTree {
		end = last // positions are not seqs there
	}
	for _, a := range t.anchors {
		if a.state != pending {
			continue
		}
		switch {
		case a.isHead && last > 0 && a.size >= t.first && a.size <= last:
			a.state, a.detail = mismatched, fmt.Sprintf("the log holds no event seq %d", a.size)
		case a.isHead && t.ledger && a.size > last:
			a.state = beyond
		case a.isHead && !t.ledger:
			a.state = unreached
		case a.isHead:
		case a.size > end && !t.noTree && t.proveBeyond(a):
		case a.size > end && (t.ledger || a.carried):
			a.state = beyond
		case !t.ledger && a.given && (a.size > end || a.size < t.start || t.noTree):
			a.state = unreached
		}
	}
}

// checkGenesis checks, for an export from seq 1, that it chains from the
// genesis of the ledger its checkpoints name.
func (t *treeCheck) checkGenesis(firstSeq int64, firstPrev string) {
	if t.trust == nil || t.origin == "" || firstSeq != 1 {
		return
	}
	id := strings.TrimPrefix(t.origin, checkpoint.OriginPrefix)
	if g := events.Genesis(id); firstPrev != g {
		t.report.Add(verify.Problem{Seq: 1, Kind: verify.KindCheckpoint, Detail: fmt.Sprintf(
			"the log starts from prev_hash %s, not from the genesis of %s that its checkpoints name (%s): another ledger's log, or re-chained from another genesis",
			firstPrev, t.origin, g)})
	}
}
