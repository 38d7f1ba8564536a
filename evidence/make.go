package evidence

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/store"
)

// Period is what a bundle is made of: the ledger read in one snapshot,
// the period, and the verifier keys of the ledger's signers.
type Period struct {
	LedgerID     string
	Since, Until time.Time
	// SignerKeys are the encoded verifier keys (NAME+HASH+KEY) of the keys
	// that sign the ledger, as its owner knows them. The bundle carries
	// them for the auditor to compare with the ones the owner gave out of
	// band; the checker trusts only those it is given.
	SignerKeys []string
	Now        time.Time
}

// Made is what Make wrote.
type Made struct {
	Header     Header
	Start, End int64 // the checkpoints' sizes (Start 0: the period starts at seq 1)
}

// Make writes the bundle of p's period to w, from q (one read snapshot of
// the ledger). It fails with ErrNoEvents, ErrNoStartCheckpoint or
// ErrNoEndCheckpoint (wrapped) when the ledger cannot prove the period.
func Make(ctx context.Context, q store.Querier, p Period, w io.Writer) (*Made, error) {
	from, to, ok, err := store.SeqRange(ctx, q, p.Since, p.Until)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w (%s to %s)", ErrNoEvents, formatTime(p.Since), formatTime(p.Until))
	}
	origin := checkpoint.Origin(p.LedgerID)
	var start *checkpoint.Signed
	if from > 1 {
		c, err := store.NewestCheckpoint(ctx, q, from-1)
		if err != nil {
			return nil, err
		}
		if c == nil {
			return nil, fmt.Errorf("%w (seq %d): the ledger's first checkpoint is later", ErrNoStartCheckpoint, from-1)
		}
		if start, err = checkpoint.Open(c.Note); err != nil {
			return nil, fmt.Errorf("the ledger's checkpoint of size %d: %w", c.Size, err)
		}
	}
	end, err := endCheckpoint(ctx, q, to, p.Until)
	if err != nil {
		return nil, err
	}
	tr := store.TreeReader(ctx, q)
	last := to
	if end.Size > to {
		last = to + 1 // the event after the period, to show where it stops
	}
	first := from
	if from > 1 {
		first = from - 1 // the event before the period
	}
	tree, err := checkpoint.TreeFrom(first-1, tr)
	if err != nil {
		return nil, fmt.Errorf("the Merkle tree before seq %d: %w (lockledger verify says why)", first, err)
	}
	var proofs []Proof
	if start != nil {
		h, err := tlog.ProveTree(end.Size, start.Size, tr)
		if err != nil {
			return nil, fmt.Errorf("proving checkpoint %d extends checkpoint %d: %w", end.Size, start.Size, err)
		}
		proofs = append(proofs, Proof{Kind: StartToEnd, From: start.Size, To: end.Size, Hashes: h})
	}
	h, err := tlog.ProveTree(end.Size, last, tr)
	if err != nil {
		return nil, fmt.Errorf("proving checkpoint %d extends seq %d: %w", end.Size, last, err)
	}
	proofs = append(proofs, Proof{Kind: EventsToEnd, From: last, To: end.Size, Hashes: h})

	opened, err := openAt(ctx, q, from-1)
	if err != nil {
		return nil, err
	}
	cos, err := store.StoredCosignatures(ctx, q)
	if err != nil {
		return nil, err
	}

	bw := bufio.NewWriterSize(w, 256<<10)
	hd := Header{Version: Version, LedgerID: p.LedgerID, Origin: origin, Since: formatTime(p.Since), Until: formatTime(p.Until),
		FirstSeq: from, LastSeq: to, Events: to - from + 1, MadeAt: formatTime(p.Now)}
	type line struct {
		key string
		v   any
	}
	lines := []line{{"evidence", hd}}
	for _, k := range p.SignerKeys {
		lines = append(lines, line{"signer_key", k})
	}
	if start != nil {
		lines = append(lines, line{"start", string(start.Note)})
	}
	lines = append(lines, line{"end", string(end.Note)})
	for _, c := range cos {
		if (start != nil && c.Size == start.Size) || c.Size == end.Size {
			lines = append(lines, line{"cosignature", string(c.Note)})
		}
	}
	for _, pr := range proofs {
		lines = append(lines, line{"proof", pr})
	}
	for _, l := range lines {
		if err := replay.WriteLine(bw, l.key, l.v); err != nil {
			return nil, err
		}
	}
	if err := replay.WriteTreeLine(bw, first-1, tree.Frontier()); err != nil {
		return nil, err
	}
	sum := newSummarizer(from)
	for _, ev := range opened {
		incl, err := tlog.ProveRecord(end.Size, checkpoint.Index(ev.Seq), tr)
		if err != nil {
			return nil, fmt.Errorf("proving seq %d is in checkpoint %d: %w", ev.Seq, end.Size, err)
		}
		if err := replay.WriteLine(bw, "opened_before", OpenedBefore{Event: exportLine(ev), Inclusion: incl}); err != nil {
			return nil, err
		}
		sum.openedBefore(ev)
	}
	err = replay.ScanRows(ctx, q, replay.Filter{FromSeq: first, ToSeq: last}, func(r *replay.Row) error {
		if r.Seq >= from && r.Seq <= to {
			ev, err := replay.DecodeEvent(r.Seq, r.Body)
			if err != nil {
				return err
			}
			ev.Seq = r.Seq
			sum.apply(ev)
		}
		return replay.WriteExportLine(bw, r)
	})
	if err != nil {
		return nil, err
	}
	if err := replay.WriteLine(bw, "summary", sum.finish()); err != nil {
		return nil, err
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	m := &Made{Header: hd, End: end.Size}
	if start != nil {
		m.Start = start.Size
	}
	return m, nil
}

// endCheckpoint picks the checkpoint that shows where the period ends:
// the smallest stored one past its last event (the event after it is
// then in the bundle, dated after the period), else one of exactly its
// last event signed after the period ended.
func endCheckpoint(ctx context.Context, q store.Querier, to int64, until time.Time) (*checkpoint.Signed, error) {
	cs, err := store.StoredCheckpoints(ctx, q, to, 0)
	if err != nil {
		return nil, err
	}
	var best *checkpoint.Signed
	for _, c := range cs {
		s, err := checkpoint.Open(c.Note)
		if err != nil || s.Size != c.Size {
			continue // verify reports such a row; it proves nothing here
		}
		if s.Size == to && !s.Time.After(until) {
			continue
		}
		if best == nil || s.Size < best.Size {
			best = s
		}
	}
	if best == nil {
		return nil, fmt.Errorf("%w: none of %d events or more, signed after %s, is stored yet (lockledger checkpoint signs one)", ErrNoEndCheckpoint, to+1, formatTime(until))
	}
	return best, nil
}

// openAt is the events that opened the holdings still open after seq n,
// by seq, with their bodies and chain links.
func openAt(ctx context.Context, q store.Querier, n int64) ([]*replay.Event, error) {
	if n < 1 {
		return nil, nil
	}
	f := replay.NewHoldingFold()
	err := replay.Scan(ctx, q, replay.Filter{FromSeq: 1, ToSeq: n}, func(ev *replay.Event) error {
		f.Apply(ev)
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []*replay.Event
	for _, h := range f.Open() {
		out = append(out, h.Opened)
	}
	return out, nil
}

// exportLine is the export line of an event read with its links.
func exportLine(ev *replay.Event) json.RawMessage {
	var b bytes.Buffer
	_ = replay.WriteExportLine(&b, &replay.Row{Seq: ev.Seq, PrevHash: ev.PrevHash, Hash: ev.Hash, Body: ev.Body})
	return json.RawMessage(bytes.TrimRight(b.Bytes(), "\n"))
}
