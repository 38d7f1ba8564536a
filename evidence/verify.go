package evidence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/verify"
)

// Result is the checker's report. With no problems, the period's events
// are seq FirstSeq..LastSeq of the log the end checkpoint signs, the log
// the start checkpoint signed is a prefix of it, and Summary is what the
// events say.
type Result struct {
	OK bool `json:"ok"`
	// Problems are verify's: the bundle's export lines (tree, checkpoints,
	// cosignatures, events) are checked as verify --file checks an export.
	Problems []verify.Problem `json:"problems"`
	Header   Header           `json:"period"`
	Start    *Head            `json:"start,omitempty"`
	End      *Head            `json:"end,omitempty"`
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

// checker reads the lines of a bundle that an export does not have, and
// hands the others to replay's check of an export (fc).
type checker struct {
	res      *Result
	trust    replay.Trust
	opts     []replay.VerifyOption
	fc       *replay.FileCheck
	hd       *Header
	problems []verify.Problem
	start    *checkpoint.Signed
	end      *checkpoint.Signed
	startRaw []byte
	endRaw   []byte
	proofs   map[string]Proof
	opened   []OpenedBefore
	openedAt []int64 // line of each opened_before
	summary  *Summary

	sum         *summarizer
	started     bool
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
	at   time.Time
}

func (c *checker) add(kind verify.Kind, line, seq int64, format string, args ...any) {
	c.problems = append(c.problems, verify.Problem{Kind: kind, Line: line, Seq: seq, Detail: fmt.Sprintf(format, args...)})
}

// Verify checks a bundle read from r against what t trusts: the ledger's
// signer keys (t.Verifiers, from its owner, out of band) and, optionally,
// witness keys whose cosignatures it checks (t.Cosigners and t.Quorum, as
// verify's). The ledger is the bundle's; opts are replay's (ClockSkew).
// Problems with the bundle are in the Result; the error is for input that
// is not a bundle or cannot be read.
func Verify(r io.Reader, t replay.Trust, opts ...replay.VerifyOption) (*Result, error) {
	c := &checker{res: &Result{}, trust: t, opts: opts, proofs: map[string]Proof{}}
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
	rep := c.fc.Finish(n)
	c.finish(n, rep)
	for _, p := range c.problems {
		rep.Add(p)
	}
	rep.Finish()
	c.res.OK, c.res.Problems = rep.OK, rep.Problems
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
	c.trust.LedgerID, c.trust.Expected = c.hd.LedgerID, c.trust.Expected || len(c.trust.Verifiers) > 0
	c.fc = replay.NewFileCheck("bundle", "", append(c.opts, replay.WithTrust(&c.trust))...)
	var err1, err2 error
	c.since, err1 = time.Parse(time.RFC3339Nano, c.hd.Since)
	c.until, err2 = time.Parse(time.RFC3339Nano, c.hd.Until)
	if err1 != nil || err2 != nil {
		c.add(verify.KindMalformed, 1, 0, "the header's since %q or until %q is not an RFC 3339 time", c.hd.Since, c.hd.Until)
	}
	if c.hd.FirstSeq < 1 || c.hd.LastSeq < c.hd.FirstSeq || c.hd.Events != c.hd.LastSeq-c.hd.FirstSeq+1 {
		c.add(verify.KindMalformed, 1, 0, "the header's first_seq %d, last_seq %d and events %d do not describe a period of events", c.hd.FirstSeq, c.hd.LastSeq, c.hd.Events)
	}
	if c.hd.Origin != checkpoint.Origin(c.hd.LedgerID) {
		c.add(verify.KindMalformed, 1, 0, "the header's origin %q is not ledger %s's", c.hd.Origin, c.hd.LedgerID)
	}
	return nil
}

// line reads one line after the header.
func (c *checker) line(n int64, line []byte) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		c.add(verify.KindMalformed, n, 0, "not a JSON object: %v", err)
		return
	}
	if _, ok := m["seq"]; ok {
		c.event(n, line)
		return
	}
	if len(m) != 1 {
		c.add(verify.KindMalformed, n, 0, "a line must hold one of evidence, signer_key, start, end, cosignature, proof, tree, opened_before, an event or summary")
		return
	}
	if c.summary != nil {
		c.add(verify.KindMalformed, n, 0, "a line after the summary: the summary is the last line")
		return
	}
	for k, v := range m {
		if c.started && k != "summary" {
			c.add(verify.KindMalformed, n, 0, "a %s line after the events: only the summary follows them", k)
			return
		}
		var err error
		switch k {
		case "signer_key":
			var s string
			err = json.Unmarshal(v, &s)
			c.res.SignerKeys = append(c.res.SignerKeys, s)
		case "tree", "cosignature":
			c.fc.Line(n, line) // an export's line
		case "start", "end":
			var s string
			if err = json.Unmarshal(v, &s); err == nil {
				c.note(n, k, []byte(s))
			}
		case "proof":
			var p Proof
			if err = json.Unmarshal(v, &p); err == nil {
				if _, dup := c.proofs[p.Kind]; dup || (p.Kind != StartToEnd && p.Kind != EventsToEnd) {
					c.add(verify.KindMalformed, n, 0, "a proof of kind %q: want one %s and one %s", p.Kind, StartToEnd, EventsToEnd)
				}
				c.proofs[p.Kind] = p
				if p.Kind == EventsToEnd {
					c.exportLine(n, "consistency", map[string]any{"from": p.From, "to": p.To, "proof": p.Hashes})
				}
			}
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
			c.add(verify.KindMalformed, n, 0, "an unknown line %q", k)
		}
		if err != nil {
			c.add(verify.KindMalformed, n, 0, "the %s line: %v", k, err)
		}
	}
}

// exportLine hands fc the export's line {key: v}.
func (c *checker) exportLine(n int64, key string, v any) {
	var b bytes.Buffer
	_ = replay.WriteLine(&b, key, v) // strings, numbers and hashes always marshal
	c.fc.Line(n, bytes.TrimSpace(b.Bytes()))
}

// note reads the start or end checkpoint: fc checks it as an export's
// checkpoint (its signature, its ledger, its root); the period's edges
// are held to its size and time.
func (c *checker) note(n int64, kind string, msg []byte) {
	c.exportLine(n, "checkpoint", string(msg))
	raw, signed, head := &c.startRaw, &c.start, &c.res.Start
	if kind == "end" {
		raw, signed, head = &c.endRaw, &c.end, &c.res.End
	}
	if *raw != nil {
		c.add(verify.KindMalformed, n, 0, "a second %s checkpoint", kind)
	}
	*raw = msg
	s, err := checkpoint.Open(msg, c.trust.Verifiers...)
	if err != nil || s.Origin != c.hd.Origin {
		return // fc reports it
	}
	*signed, *head = s, &Head{Size: s.Size, Key: s.KeyName(), Time: s.Time}
}

// begin runs at the first event line: the summary's fold starts from the
// holdings open at the start, each proven to be in the end checkpoint's
// log.
func (c *checker) begin() {
	c.started = true
	c.sum = newSummarizer(c.hd.FirstSeq)
	for i, o := range c.opened {
		r, err := replay.ParseExportLine(o.Event)
		var ev *replay.Event
		if err == nil {
			ev, err = replay.DecodeEvent(r.Seq, r.Body)
		}
		switch {
		case err != nil:
			c.add(verify.KindMalformed, c.openedAt[i], 0, "opened_before: %v", err)
		case r.Seq >= c.hd.FirstSeq:
			c.add(verify.KindMalformed, c.openedAt[i], r.Seq, "opened_before names an event of the period")
		case c.end == nil:
		default:
			if err := tlog.CheckRecord(o.Inclusion, c.end.Size, c.end.Root, checkpoint.Index(r.Seq), checkpoint.LeafHash(r.Body)); err != nil {
				c.add(verify.KindCheckpoint, c.openedAt[i], r.Seq, "opened_before: the event is not seq %d of the end checkpoint's log: %v", r.Seq, err)
				continue
			}
			ev.Seq = r.Seq
			c.sum.openedBefore(ev)
		}
	}
}

// event reads an event line: fc checks it as an export's; here it is
// placed before, in or after the period, and folded into the summary.
func (c *checker) event(n int64, line []byte) {
	if c.summary != nil {
		c.add(verify.KindMalformed, n, 0, "an event line after the summary")
		return
	}
	if !c.started {
		c.begin()
	}
	r := c.fc.Line(n, line)
	if r == nil {
		return // fc reports it
	}
	ev, err := replay.DecodeEvent(r.Seq, r.Body)
	if err != nil {
		return // fc reports it
	}
	ev.Seq = r.Seq
	cur := &row{seq: r.Seq, line: n, at: ev.Time}
	switch {
	case r.Seq < c.hd.FirstSeq:
		c.before = cur
	case r.Seq > c.hd.LastSeq:
		c.after = cur
	default:
		c.period++
		c.lastSeen = cur
		if c.firstPeriod == nil {
			c.firstPeriod = cur
		}
		c.sum.apply(ev)
	}
}

// finish checks what can be checked only at the end: the proofs, the
// edges of the period and the summary.
func (c *checker) finish(n int64, rep *verify.Report) {
	hd := c.hd
	if !c.started {
		return // fc reports a bundle without events
	}
	if c.endRaw == nil {
		c.add(verify.KindCheckpoint, 0, 0, "no end checkpoint")
	}
	if hd.FirstSeq > 1 && c.startRaw == nil {
		c.add(verify.KindCheckpoint, 0, 0, "no start checkpoint: the period starts at seq %d", hd.FirstSeq)
	}
	if c.start != nil && c.start.Size > hd.FirstSeq-1 {
		c.add(verify.KindCheckpoint, 0, hd.FirstSeq, "the start checkpoint covers %d events, past the period's start (seq %d)", c.start.Size, hd.FirstSeq)
	}
	if c.period != hd.Events || c.lastSeen == nil || c.lastSeen.seq != hd.LastSeq {
		c.add(verify.KindDeleted, 0, 0, "the bundle holds %d events of the period, the header says %d (seq %d-%d): the bundle was cut or added to", c.period, hd.Events, hd.FirstSeq, hd.LastSeq)
	}
	// The edges: the event before the period is dated before it, the
	// period's first and last events within it, and the event after it
	// (or the end checkpoint's signing) after it.
	if hd.FirstSeq > 1 && (c.before == nil || c.before.seq != hd.FirstSeq-1) {
		c.add(verify.KindCheckpoint, 0, hd.FirstSeq-1, "the event before the period (seq %d) is not in the bundle: nothing shows the period starts there", hd.FirstSeq-1)
	}
	if b := c.before; b != nil && !b.at.Before(c.since) {
		c.add(verify.KindCheckpoint, b.line, b.seq, "the event before the period is dated %s, not before its start %s: the period was cut", events.FormatTime(b.at), hd.Since)
	}
	for _, r := range []*row{c.firstPeriod, c.lastSeen} {
		if r != nil && (r.at.Before(c.since) || r.at.After(c.until)) {
			c.add(verify.KindCheckpoint, r.line, r.seq, "dated %s, outside the period %s to %s", events.FormatTime(r.at), hd.Since, hd.Until)
		}
	}
	if c.end != nil {
		switch {
		case c.end.Size < hd.LastSeq:
			c.add(verify.KindCheckpoint, 0, hd.LastSeq, "the end checkpoint covers %d events, fewer than the period's last seq %d", c.end.Size, hd.LastSeq)
		case c.end.Size == hd.LastSeq && c.after != nil:
			c.add(verify.KindCheckpoint, c.after.line, c.after.seq, "an event after the end checkpoint")
		case c.end.Size == hd.LastSeq && !c.end.Time.After(c.until):
			c.add(verify.KindCheckpoint, 0, hd.LastSeq, "the end checkpoint (size %d) was signed at %s, not after the period's end %s: it cannot show that no later event is dated within the period",
				c.end.Size, c.end.Time.Format(time.RFC3339Nano), hd.Until)
		case c.end.Size > hd.LastSeq && (c.after == nil || c.after.seq != hd.LastSeq+1):
			c.add(verify.KindCheckpoint, 0, hd.LastSeq+1, "the event after the period (seq %d) is not in the bundle: nothing shows the period ends at seq %d", hd.LastSeq+1, hd.LastSeq)
		}
	}
	if a := c.after; a != nil && !a.at.After(c.until) {
		c.add(verify.KindCheckpoint, a.line, a.seq, "the event after the period is dated %s, not after its end %s: the period was cut", events.FormatTime(a.at), hd.Until)
	}
	c.checkProofs(rep.LastSeq)
	for _, r := range rep.Checkpoints {
		if w, ok := strings.CutPrefix(r.Key, "witness "); ok && r.Result == "matches" && c.end != nil && r.Size == c.end.Size {
			c.res.Cosigned = append(c.res.Cosigned, w)
		}
	}
	if c.summary == nil {
		c.add(verify.KindMalformed, n, 0, "no summary line: the bundle was cut")
	}
	got := c.sum.finish()
	c.res.Summary = &got
	if c.summary != nil && !sameSummary(got, *c.summary) {
		c.add(verify.KindMalformed, 0, 0, "the summary is not what the events say (the checker's own is reported)")
	}
}

// checkProofs checks that the events_to_end proof (which fc checks against
// the end checkpoint) starts at the last event line, and the start_to_end
// proof, which no export carries.
func (c *checker) checkProofs(last int64) {
	if c.end == nil {
		return
	}
	if p, ok := c.proofs[EventsToEnd]; !ok || p.From != last || p.To != c.end.Size {
		c.add(verify.KindCheckpoint, 0, last, "no %s proof from the last event line (seq %d) to the end checkpoint (size %d)", EventsToEnd, last, c.end.Size)
	}
	if c.start == nil {
		return
	}
	p, ok := c.proofs[StartToEnd]
	switch {
	case !ok || p.From != c.start.Size || p.To != c.end.Size:
		c.add(verify.KindCheckpoint, 0, 0, "no %s proof from the start checkpoint (size %d) to the end checkpoint (size %d)", StartToEnd, c.start.Size, c.end.Size)
	case c.start.Size > c.end.Size:
		c.add(verify.KindCheckpoint, 0, 0, "the start checkpoint (size %d) is larger than the end checkpoint (size %d)", c.start.Size, c.end.Size)
	default:
		if err := tlog.CheckTree(p.Hashes, c.end.Size, c.end.Root, c.start.Size, c.start.Root); err != nil {
			c.add(verify.KindCheckpoint, 0, 0, "the end checkpoint's log does not extend the start checkpoint's: events were removed or rewritten between them (%v)", err)
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
