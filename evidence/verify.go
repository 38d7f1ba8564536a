package evidence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/replay"
)

// Options are what the checker trusts: the ledger's signer keys (from its
// owner, out of band) and, optionally, witness keys whose cosignatures it
// reports.
type Options struct {
	Verifiers []note.Verifier
	Cosigners []note.Verifier
}

// Problem is one way a bundle fails.
type Problem struct {
	Line   int64  `json:"line,omitempty"`
	Seq    int64  `json:"seq,omitempty"`
	Detail string `json:"detail"`
}

func (p Problem) String() string {
	var where []string
	if p.Seq > 0 {
		where = append(where, fmt.Sprintf("seq %d", p.Seq))
	}
	if p.Line > 0 {
		where = append(where, fmt.Sprintf("line %d", p.Line))
	}
	if len(where) == 0 {
		return p.Detail
	}
	return strings.Join(where, ", ") + ": " + p.Detail
}

// Result is the checker's report. With no problems, the period's events
// are seq FirstSeq..LastSeq of the log the end checkpoint signs, the log
// the start checkpoint signed is a prefix of it, and Summary is what the
// events say.
type Result struct {
	OK       bool      `json:"ok"`
	Problems []Problem `json:"problems"`
	Header   Header    `json:"period"`
	Start    *Head     `json:"start,omitempty"`
	End      *Head     `json:"end,omitempty"`
	// SignerKeys are the keys the bundle carries (not trusted).
	SignerKeys []string `json:"signer_keys,omitempty"`
	// Cosigned names the given witnesses whose cosignature of the end
	// checkpoint verified.
	Cosigned []string `json:"cosigned,omitempty"`
	Summary  *Summary `json:"summary,omitempty"`
}

// Head is a checkpoint as the checker read it.
type Head struct {
	Size int64     `json:"size"`
	Key  string    `json:"key"`
	Time time.Time `json:"time"`
}

// ErrNotABundle: input whose first line is not an evidence header.
var ErrNotABundle = errors.New("not a lockledger evidence bundle")

type checker struct {
	res      *Result
	opts     Options
	hd       *Header
	start    *checkpoint.Signed
	end      *checkpoint.Signed
	startRaw []byte
	endRaw   []byte
	cos      [][]byte
	proofs   map[string]Proof
	tree     *Tree
	opened   []OpenedBefore
	openedAt []int64 // line of each opened_before
	summary  *Summary

	t           *checkpoint.Tree
	sum         *summarizer
	started     bool
	prevLine    *row // the last event line
	firstRow    *row
	rows        int64
	period      int64 // event lines inside the period
	lastSeen    *row  // last event line inside the period
	firstPeriod *row  // first event line inside the period
	after       *row  // the event line after the period
	before      *row  // the event line before the period
	since       time.Time
	until       time.Time
}

type row struct {
	seq  int64
	line int64
	prev string
	hash string
	body []byte
	at   time.Time
}

func (c *checker) add(line, seq int64, format string, args ...any) {
	c.res.Problems = append(c.res.Problems, Problem{Line: line, Seq: seq, Detail: fmt.Sprintf(format, args...)})
}

// Verify checks a bundle read from r against opts. Problems with the
// bundle are in the Result; the error is for input that is not a bundle
// or cannot be read.
func Verify(r io.Reader, opts Options) (*Result, error) {
	c := &checker{res: &Result{Problems: []Problem{}}, opts: opts, proofs: map[string]Proof{}}
	n, err := replay.ScanLines(r, func(n int64, line []byte) error {
		if c.hd == nil {
			return c.header(line)
		}
		c.line(n, line)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if c.hd == nil {
		return nil, fmt.Errorf("%w: it is empty", ErrNotABundle)
	}
	c.finish(n)
	c.res.OK = len(c.res.Problems) == 0
	return c.res, nil
}

func (c *checker) header(line []byte) error {
	var h struct {
		Evidence *Header `json:"evidence"`
	}
	if err := json.Unmarshal(line, &h); err != nil || h.Evidence == nil {
		return fmt.Errorf("%w: the first line is not {\"evidence\": ...}", ErrNotABundle)
	}
	if h.Evidence.Version != Version {
		return fmt.Errorf("%w: version %d, this lockledger reads version %d", ErrNotABundle, h.Evidence.Version, Version)
	}
	c.hd = h.Evidence
	c.res.Header = *h.Evidence
	var err1, err2 error
	c.since, err1 = time.Parse(time.RFC3339Nano, c.hd.Since)
	c.until, err2 = time.Parse(time.RFC3339Nano, c.hd.Until)
	if err1 != nil || err2 != nil {
		c.add(1, 0, "the header's since %q or until %q is not an RFC 3339 time", c.hd.Since, c.hd.Until)
	}
	if c.hd.FirstSeq < 1 || c.hd.LastSeq < c.hd.FirstSeq || c.hd.Events != c.hd.LastSeq-c.hd.FirstSeq+1 {
		c.add(1, 0, "the header's first_seq %d, last_seq %d and events %d do not describe a period of events", c.hd.FirstSeq, c.hd.LastSeq, c.hd.Events)
	}
	if c.hd.Origin != checkpoint.Origin(c.hd.LedgerID) {
		c.add(1, 0, "the header's origin %q is not ledger %s's", c.hd.Origin, c.hd.LedgerID)
	}
	return nil
}

// line reads one line after the header.
func (c *checker) line(n int64, line []byte) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		c.add(n, 0, "not a JSON object: %v", err)
		return
	}
	if _, ok := m["seq"]; ok {
		c.event(n, line)
		return
	}
	if len(m) != 1 {
		c.add(n, 0, "a line must hold one of evidence, signer_key, start, end, cosignature, proof, tree, opened_before, an event or summary")
		return
	}
	if c.summary != nil {
		c.add(n, 0, "a line after the summary: the summary is the last line")
		return
	}
	for k, v := range m {
		if c.started && k != "summary" {
			c.add(n, 0, "a %s line after the events: only the summary follows them", k)
			return
		}
		var err error
		switch k {
		case "signer_key":
			var s string
			err = json.Unmarshal(v, &s)
			c.res.SignerKeys = append(c.res.SignerKeys, s)
		case "start", "end", "cosignature":
			var s string
			if err = json.Unmarshal(v, &s); err == nil {
				c.note(n, k, []byte(s))
			}
		case "proof":
			var p Proof
			if err = json.Unmarshal(v, &p); err == nil {
				if _, dup := c.proofs[p.Kind]; dup || (p.Kind != StartToEnd && p.Kind != EventsToEnd) {
					c.add(n, 0, "a proof of kind %q: want one %s and one %s", p.Kind, StartToEnd, EventsToEnd)
				}
				c.proofs[p.Kind] = p
			}
		case "tree":
			if c.tree != nil {
				c.add(n, 0, "a second tree line")
			}
			c.tree = &Tree{}
			err = json.Unmarshal(v, c.tree)
		case "opened_before":
			var o OpenedBefore
			if err = json.Unmarshal(v, &o); err == nil {
				c.opened = append(c.opened, o)
				c.openedAt = append(c.openedAt, n)
			}
		case "summary":
			c.summary = &Summary{}
			err = json.Unmarshal(v, c.summary)
		default:
			c.add(n, 0, "an unknown line %q", k)
		}
		if err != nil {
			c.add(n, 0, "the %s line: %v", k, err)
		}
	}
}

func (c *checker) note(n int64, kind string, msg []byte) {
	switch kind {
	case "cosignature":
		c.cos = append(c.cos, msg)
		return
	case "start":
		if c.startRaw != nil {
			c.add(n, 0, "a second start checkpoint")
		}
		c.startRaw = msg
	case "end":
		if c.endRaw != nil {
			c.add(n, 0, "a second end checkpoint")
		}
		c.endRaw = msg
	}
	s, err := checkpoint.Open(msg, c.opts.Verifiers...)
	if err != nil {
		c.add(n, 0, "the %s checkpoint is not signed by a given verifier key: %v", kind, err)
		return
	}
	if s.Origin != c.hd.Origin {
		c.add(n, 0, "the %s checkpoint is of %q, the bundle of %q", kind, s.Origin, c.hd.Origin)
		return
	}
	h := &Head{Size: s.Size, Key: s.KeyName(), Time: s.Time}
	if kind == "start" {
		c.start, c.res.Start = s, h
	} else {
		c.end, c.res.End = s, h
	}
}

// begin runs at the first event line: the checkpoints are known, the
// tree starts from the frontier, the summary's fold from the holdings
// open at the start.
func (c *checker) begin(n int64) {
	c.started = true
	if c.tree == nil {
		c.add(n, 0, "no tree line before the events")
		c.tree = &Tree{}
	}
	t, err := checkpoint.NewTreeAt(c.tree.Size, c.tree.Frontier)
	if err != nil {
		c.add(n, 0, "the tree line: %v", err)
		t = &checkpoint.Tree{}
	}
	c.t = t
	c.sum = newSummarizer(c.hd.FirstSeq)
	for i, o := range c.opened {
		r, err := parseEvent(o.Event)
		if err != nil {
			c.add(c.openedAt[i], 0, "opened_before: %v", err)
			continue
		}
		if r.seq >= c.hd.FirstSeq {
			c.add(c.openedAt[i], r.seq, "opened_before names an event of the period")
			continue
		}
		if c.end == nil {
			continue
		}
		if err := tlog.CheckRecord(o.Inclusion, c.end.Size, c.end.Root, checkpoint.Index(r.seq), checkpoint.LeafHash(r.body)); err != nil {
			c.add(c.openedAt[i], r.seq, "opened_before: the event is not seq %d of the end checkpoint's log: %v", r.seq, err)
			continue
		}
		ev, err := replay.DecodeEvent(r.seq, r.body)
		if err != nil {
			c.add(c.openedAt[i], r.seq, "opened_before: %v", err)
			continue
		}
		ev.Seq = r.seq
		c.sum.openedBefore(ev)
	}
}

// parseEvent reads an event line: an export line, whose body's at is a time.
func parseEvent(line []byte) (*row, error) {
	r, err := replay.ParseExportLine(line)
	if err != nil {
		return nil, err
	}
	var env struct {
		At string `json:"at"`
	}
	_ = json.Unmarshal(r.Body, &env)
	at, err := events.ParseTime(env.At)
	if err != nil {
		return nil, fmt.Errorf("body: at %q: %w", env.At, err)
	}
	return &row{seq: r.Seq, prev: r.PrevHash, hash: r.Hash, body: r.Body, at: at}, nil
}

func (c *checker) event(n int64, line []byte) {
	if c.summary != nil {
		c.add(n, 0, "an event line after the summary")
		return
	}
	if !c.started {
		c.begin(n)
	}
	r, err := parseEvent(line)
	if err != nil {
		c.add(n, 0, "%v", err)
		return
	}
	r.line = n
	want := c.tree.Size + c.rows + 1
	c.rows++
	if r.seq != want {
		c.add(n, r.seq, "seq %d where seq %d belongs: events are missing or out of order", r.seq, want)
	}
	if events.ChainHash(r.seq, r.prev, r.body) != r.hash {
		c.add(n, r.seq, "its hash is not the chain hash of its seq, prev_hash and body: the event was changed")
	}
	if p := c.prevLine; p != nil && r.prev != p.hash {
		c.add(n, r.seq, "its prev_hash is not the hash of the line before: an event was removed or changed")
	}
	if c.firstRow == nil {
		c.firstRow = r
		if r.seq == 1 && r.prev != events.Genesis(c.hd.LedgerID) {
			c.add(n, r.seq, "seq 1 does not chain from the genesis of ledger %s", c.hd.LedgerID)
		}
	}
	c.prevLine = r
	if _, err := c.t.Append(checkpoint.LeafHash(r.body)); err != nil {
		c.add(n, r.seq, "the Merkle tree: %v", err)
	}
	switch {
	case r.seq < c.hd.FirstSeq:
		c.before = r
	case r.seq > c.hd.LastSeq:
		c.after = r
	default:
		c.period++
		c.lastSeen = r
		if c.firstPeriod == nil {
			c.firstPeriod = r
		}
		ev, err := replay.DecodeEvent(r.seq, r.body)
		if err != nil {
			c.add(n, r.seq, "%v", err)
			return
		}
		ev.Seq = r.seq
		c.sum.apply(ev)
	}
}

// finish checks what can be checked only at the end: the proofs, the
// edges of the period and the summary.
func (c *checker) finish(n int64) {
	hd := c.hd
	if !c.started {
		c.add(n, 0, "the bundle holds no event")
		return
	}
	if c.endRaw == nil {
		c.add(0, 0, "no end checkpoint")
	}
	if hd.FirstSeq > 1 && c.startRaw == nil {
		c.add(0, 0, "no start checkpoint: the period starts at seq %d", hd.FirstSeq)
	}
	if c.start != nil && c.start.Size > hd.FirstSeq-1 {
		c.add(0, hd.FirstSeq, "the start checkpoint covers %d events, past the period's start (seq %d)", c.start.Size, hd.FirstSeq)
	}
	if c.period != hd.Events || c.lastSeen == nil || c.lastSeen.seq != hd.LastSeq {
		c.add(0, 0, "the bundle holds %d events of the period, the header says %d (seq %d-%d): the bundle was cut or added to", c.period, hd.Events, hd.FirstSeq, hd.LastSeq)
	}
	// The edges: the event before the period is dated before it, the
	// period's first and last events within it, and the event after it
	// (or the end checkpoint's signing) after it.
	if hd.FirstSeq > 1 && (c.before == nil || c.before.seq != hd.FirstSeq-1) {
		c.add(0, hd.FirstSeq-1, "the event before the period (seq %d) is not in the bundle: nothing shows the period starts there", hd.FirstSeq-1)
	}
	if b := c.before; b != nil && !b.at.Before(c.since) {
		c.add(b.line, b.seq, "the event before the period is dated %s, not before its start %s: the period was cut", events.FormatTime(b.at), hd.Since)
	}
	if c.period > 0 {
		for _, r := range []*row{c.firstPeriod, c.lastSeen} {
			if r != nil && (r.at.Before(c.since) || r.at.After(c.until)) {
				c.add(r.line, r.seq, "dated %s, outside the period %s to %s", events.FormatTime(r.at), hd.Since, hd.Until)
			}
		}
	}
	if c.end != nil {
		switch {
		case c.end.Size < hd.LastSeq:
			c.add(0, hd.LastSeq, "the end checkpoint covers %d events, fewer than the period's last seq %d", c.end.Size, hd.LastSeq)
		case c.end.Size == hd.LastSeq && c.after != nil:
			c.add(c.after.line, c.after.seq, "an event after the end checkpoint")
		case c.end.Size == hd.LastSeq && !c.end.Time.After(c.until):
			c.add(0, hd.LastSeq, "the end checkpoint (size %d) was signed at %s, not after the period's end %s: it cannot show that no later event is dated within the period",
				c.end.Size, c.end.Time.Format(time.RFC3339Nano), hd.Until)
		case c.end.Size > hd.LastSeq && (c.after == nil || c.after.seq != hd.LastSeq+1):
			c.add(0, hd.LastSeq+1, "the event after the period (seq %d) is not in the bundle: nothing shows the period ends at seq %d", hd.LastSeq+1, hd.LastSeq)
		}
	}
	if a := c.after; a != nil && !a.at.After(c.until) {
		c.add(a.line, a.seq, "the event after the period is dated %s, not after its end %s: the period was cut", events.FormatTime(a.at), hd.Until)
	}
	c.checkProofs()
	c.checkCosignatures()
	if c.summary == nil {
		c.add(n, 0, "no summary line: the bundle was cut")
	}
	got := c.sum.finish()
	c.res.Summary = &got
	if c.summary != nil && !sameSummary(got, *c.summary) {
		c.add(0, 0, "the summary is not what the events say (the checker's own is reported)")
	}
}

func (c *checker) checkProofs() {
	if c.end == nil {
		return
	}
	last := c.tree.Size + c.rows
	p, ok := c.proofs[EventsToEnd]
	if !ok || p.From != last || p.To != c.end.Size {
		c.add(0, last, "no %s proof from the last event line (seq %d) to the end checkpoint (size %d)", EventsToEnd, last, c.end.Size)
	} else if root, err := c.t.Root(); err != nil {
		c.add(0, last, "the Merkle tree: %v", err)
	} else if err := tlog.CheckTree(p.Hashes, c.end.Size, c.end.Root, last, root); err != nil {
		c.add(0, last, "the events are not seq %d-%d of the log the end checkpoint signs: a tree of the bundle's events does not extend to it (%v)",
			c.tree.Size+1, last, err)
	}
	if c.start == nil {
		return
	}
	p, ok = c.proofs[StartToEnd]
	if !ok || p.From != c.start.Size || p.To != c.end.Size {
		c.add(0, 0, "no %s proof from the start checkpoint (size %d) to the end checkpoint (size %d)", StartToEnd, c.start.Size, c.end.Size)
		return
	}
	if c.start.Size > c.end.Size {
		c.add(0, 0, "the start checkpoint (size %d) is larger than the end checkpoint (size %d)", c.start.Size, c.end.Size)
		return
	}
	if err := tlog.CheckTree(p.Hashes, c.end.Size, c.end.Root, c.start.Size, c.start.Root); err != nil {
		c.add(0, 0, "the end checkpoint's log does not extend the start checkpoint's: events were removed or rewritten between them (%v)", err)
	}
}

// checkCosignatures names the given witnesses that cosigned the end
// checkpoint; a cosignature by a given witness of another tree is a
// problem (a split view).
func (c *checker) checkCosignatures() {
	if len(c.opts.Cosigners) == 0 {
		return
	}
	for _, msg := range c.cos {
		nt, err := note.Open(msg, note.VerifierList(c.opts.Cosigners...))
		var unverified *note.UnverifiedNoteError
		if errors.As(err, &unverified) {
			continue
		}
		if err != nil {
			c.add(0, 0, "a cosignature by a given witness does not verify: %v", err)
			continue
		}
		cp, err := checkpoint.ParseText([]byte(nt.Text))
		if err != nil {
			c.add(0, 0, "a cosignature: %v", err)
			continue
		}
		for _, s := range []*checkpoint.Signed{c.start, c.end} {
			if s == nil || cp.Size != s.Size {
				continue
			}
			if cp.Origin != s.Origin || cp.Root != s.Root {
				c.add(0, 0, "a witness cosigned another tree of size %d than the bundle's checkpoint: a split view", cp.Size)
			} else if s == c.end {
				for _, sig := range nt.Sigs {
					c.res.Cosigned = append(c.res.Cosigned, sig.Name)
				}
			}
		}
	}
}

// sameSummary compares two summaries as their JSON (encoding/json writes
// a value one way only).
func sameSummary(a, b Summary) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}
