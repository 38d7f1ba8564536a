package replay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/lockledger/lockledger/store"
	"github.com/lockledger/lockledger/verify"
)

// Verified is what a verify that found a ledger's log intact knows of it
// at its last event, kept by the verifier (outside the database: whoever
// can rewrite the database must not be able to choose what the next
// verify skips) so that the next verify checks only the events after it
// (VerifyLedgerFrom): the event's seq and chain hash, the Merkle tree's
// frontier there (the hashes of its complete subtrees, from which the root
// at every later size follows, given the leaves after it), the latest
// time the clock check had seen, and the fold of every event up to it.
type Verified struct {
	LedgerID string `json:"ledger_id"`
	Seq      int64  `json:"seq"`
	Hash     string `json:"hash"`
	// Frontier is the tree's frontier at Seq, in hex (checkpoint.Tree).
	Frontier []string `json:"frontier"`
	// Latest is the latest at the clock check had seen, at LatestSeq.
	Latest    time.Time `json:"latest"`
	LatestSeq int64     `json:"latest_seq"`
	// State is the fold of events 1 to Seq (State.MarshalJSON).
	State json.RawMessage `json:"state"`
	// MaxAt is the latest at of events 1 to Seq, BlockMinAt the earliest
	// of those in Seq's block (as a snapshot records them, see atBounds),
	// and Snapshots the digest of the snapshots up to Seq (see
	// snapshotsDigest): a verify from this head checks the snapshots
	// after it as a check of the whole log does, and checks the whole log
	// when those up to it changed since.
	MaxAt      string `json:"max_at"`
	BlockMinAt string `json:"block_min_at"`
	Snapshots  string `json:"snapshots"`
	// At is when the verify that kept it ran; Full that it read the
	// whole log (else it extended the one before).
	At   time.Time `json:"at"`
	Full bool      `json:"full"`
	// decoded is what Check decoded of State and Frontier, for the verify
	// from v to take rather than decode again (see take).
	decoded *decodedHead
}

// decodedHead is a Verified's fold and frontier as Check decoded them: the
// fold is the largest part of a kept head, and a verify from it checks it
// (its caller's Check, then Verify's) before it verifies from it. It holds
// for the State and Frontier it was decoded from (of), and its fold is
// taken once: the verify goes on folding it. Copies of the Verified share
// it, so taking it is for all of them.
type decodedHead struct {
	of       headSource
	st       *State
	frontier []tlog.Hash
}

// headSource names the State and Frontier a head was decoded from: a
// Verified whose fields were set again since is decoded again.
type headSource struct {
	state    *byte
	frontier *string
	n, m     int
}

func (v *Verified) source() headSource {
	h := headSource{n: len(v.State), m: len(v.Frontier)}
	if h.n > 0 {
		h.state = &v.State[0]
	}
	if h.m > 0 {
		h.frontier = &v.Frontier[0]
	}
	return h
}

// Keep has the verify fill v with what it knew at the log's last event,
// when the log read whole and intact up to it (v.Seq 0 otherwise). The
// caller keeps it only when the whole check (storage, projections) is OK.
func Keep(v *Verified) VerifyOption { return func(c *verifyConfig) { c.keep = v } }

// Check says whether a verify may start from v: its state is a fold up to
// its seq, its frontier is of hashes, and it records its events' times.
// A head that fails it (damaged, or kept by an older lockledger) is one to
// check the whole log instead of.
func (v *Verified) Check() error {
	if v.Seq < 1 || v.MaxAt == "" || v.BlockMinAt == "" {
		return fmt.Errorf("replay: the verified head at seq %d records no times of its events", v.Seq)
	}
	if d := v.decoded; d != nil && d.st != nil && d.of == v.source() {
		return nil
	}
	st, frontier, err := v.decode()
	if err != nil {
		return err
	}
	v.decoded = &decodedHead{of: v.source(), st: st, frontier: frontier}
	return nil
}

// take is v's fold and frontier, checked: those Check decoded, taken (the
// verify folds on from them), or decoded now.
func (v *Verified) take() (*State, []tlog.Hash, error) {
	if err := v.Check(); err != nil {
		return nil, nil, err
	}
	d := v.decoded
	st := d.st
	d.st, v.decoded = nil, nil
	return st, d.frontier, nil
}

// decode is v's fold and frontier.
func (v *Verified) decode() (*State, []tlog.Hash, error) {
	st := NewState()
	if err := st.UnmarshalJSON(v.State); err != nil {
		return nil, nil, fmt.Errorf("replay: the verified head's state: %w", err)
	}
	if st.Seq != v.Seq {
		return nil, nil, fmt.Errorf("replay: the verified head's state is at seq %d, not %d", st.Seq, v.Seq)
	}
	frontier := make([]tlog.Hash, len(v.Frontier))
	for i, s := range v.Frontier {
		b, err := hex.DecodeString(s)
		if err != nil || len(b) != len(tlog.Hash{}) {
			return nil, nil, fmt.Errorf("replay: the verified head's frontier: %q is not a hash", s)
		}
		copy(frontier[i][:], b)
	}
	return st, frontier, nil
}

// snapshotsDigest chains snapshot s to the digest prev of those before
// it: hex SHA-256 of prev and everything a reader takes of s.
func snapshotsDigest(prev string, s *store.Snapshot) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%d %s %d %s %s %d %s\n", prev, s.Seq, s.EventHash, s.FromSeq, s.MaxAt, s.MinAt, s.Version, s.StateHash)
	return hex.EncodeToString(h.Sum(nil))
}

// CheckVerifiedHead says whether the log q reads still holds from's event
// at from's seq, and the snapshots up to it that from's verify found, so
// that a verify may start from it: ok when it does. Else the whole log is
// checked, and p is the problem (a shorter log was cut or restored from
// an older copy; another event there, rewritten or replaced), which that
// check then explains, or note says why (the snapshots up to the head
// changed since: stored since, which a write or checkpoint may do, or
// rewritten, which that check names). A log whose live part starts after
// seq 1 (pruned), or that was pruned or unpruned since, is checked whole
// with neither.
func CheckVerifiedHead(ctx context.Context, q Querier, from *Verified) (ok bool, p *verify.Problem, note string, err error) {
	first, err := store.FirstSeq(ctx, q)
	if err != nil || first > 1 {
		return false, nil, "", err
	}
	// A prune or unprune since moved events below the head out of the
	// live log or back into it: the whole log is checked.
	for r, err := range store.PruneMarkers(ctx, q) {
		if err != nil || r.Seq > from.Seq {
			return false, nil, "", err
		}
	}
	hash, err := store.EventHash(ctx, q, from.Seq)
	switch {
	case err != nil:
		return false, nil, "", err
	case hash == "":
		return false, &verify.Problem{Seq: from.Seq, Kind: verify.KindDeleted, Detail: fmt.Sprintf(
			"the log no longer holds seq %d, which a verify on %s found with hash %s: events were deleted from its end, or the database was restored from an older copy",
			from.Seq, from.At.UTC().Format(time.RFC3339), from.Hash)}, "", nil
	case hash != from.Hash:
		return false, &verify.Problem{Seq: from.Seq, Kind: verify.KindModified, Detail: fmt.Sprintf(
			"seq %d's hash is %s, but a verify on %s found %s: the log was rewritten up to it, or replaced by another copy",
			from.Seq, hash, from.At.UTC().Format(time.RFC3339), from.Hash)}, "", nil
	}
	marks, err := store.SnapshotMarks(ctx, q, first, from.Seq)
	if err != nil {
		return false, nil, "", err
	}
	digest := ""
	for i := range marks {
		digest = snapshotsDigest(digest, &marks[i])
	}
	if digest != from.Snapshots {
		return false, nil, fmt.Sprintf("the whole log was checked: the snapshots up to seq %d are not those a verify on %s found (stored or rewritten since)",
			from.Seq, from.At.UTC().Format(time.RFC3339)), nil
	}
	return true, nil, "", nil
}

// VerifyLedgerFrom checks the events of a ledger after the head from, which
// an earlier verify of this ledger found intact (see Verified) and
// CheckVerifiedHead found still there, as VerifyLedger checks the whole
// log, and no event before it: each new event chains from it, its schema, columns, stored Merkle hashes, clock
// and fencing token are checked, the tree's root at every later size
// follows from from's frontier and the new leaves (so a checkpoint signed
// after from is checked against the log that from vouched for, not
// against the tree the database stores for the events before it), and
// the fold goes on from from's state. What it does not see: an event at
// or before from's seq rewritten in place since (a body edited, with or
// without its stored hashes), which only a check of the whole log
// (VerifyLedger) finds; checkpoints of sizes below from's are not checked
// again.
func VerifyLedgerFrom(ctx context.Context, q Querier, source, genesis string, from *Verified, opts ...VerifyOption) (*verify.Report, *State, error) {
	defer relaxGC(verifyGCPercent)()
	cfg := newVerifyConfig(opts)
	st, frontier, err := from.take()
	if err != nil {
		return nil, nil, err
	}
	c := newLedgerChecker(ctx, q, source, from.Hash, false, cfg)
	c.chain.after = from.Seq
	c.report.Genesis = genesis
	if err := c.tree.startAt(from.Seq, frontier); err != nil {
		return nil, nil, fmt.Errorf("replay: the verified head's frontier: %w", err)
	}
	c.clock.latest, c.clock.latestSeq = from.Latest, from.LatestSeq
	c.state, c.fromOne = st, true
	// The fold is the one from the first event (CheckVerifiedHead), the
	// snapshots after the head are compared with it as they come.
	c.folded, c.snapsDigest = 1, from.Snapshots
	c.at.block, c.at.max, c.at.blockMin = (from.Seq+c.at.every-1)/c.at.every*c.at.every, from.MaxAt, from.BlockMinAt
	if err := c.run(ctx, q, from.Seq); err != nil {
		return nil, nil, err
	}
	c.report.From = &verify.From{Seq: from.Seq, Hash: from.Hash, At: from.At}
	if c.report.Events == 0 {
		// Nothing new: the report is of the head verified before.
		c.report.LastSeq, c.report.HeadHash = from.Seq, from.Hash
	}
	c.keep(cfg.keep, false)
	return c.report, c.state, nil
}

// run reads the rows after seq through the pipeline into c, and the
// stored hashes past the log's end; then finishes.
func (c *checker) run(ctx context.Context, q Querier, after int64) error {
	// Rows and their columns are allocated a batch at a time.
	type rowAlloc struct {
		row  Row
		cols Columns
	}
	var slab []rowAlloc
	for s, err := range store.SnapshotHeads(ctx, q, after) {
		if err != nil {
			return fmt.Errorf("replay: verify: snapshots: %w", err)
		}
		c.snaps = append(c.snaps, *s)
	}
	err := pipeline(ctx, func(emit func(*Row) bool) error {
		for sr, err := range store.ChainRowsAfter(ctx, q, after) {
			if err != nil {
				return fmt.Errorf("replay: verify: %w", err)
			}
			if len(slab) == 0 {
				slab = make([]rowAlloc, pipelineBatch)
			}
			ra := &slab[0]
			slab = slab[1:]
			ra.cols = sr.Cols
			ra.row = Row{Seq: sr.Seq, Body: sr.Body, PrevHash: sr.PrevHash, Hash: sr.Hash, Cols: &ra.cols, Stored: sr.Stored}
			if !emit(&ra.row) {
				return nil
			}
		}
		return nil
	}, c.apply)
	if err != nil {
		return err
	}
	last := max(c.report.LastSeq, after)
	extra, firstExtra, err := store.TreeRowsAfter(ctx, q, last)
	if err != nil {
		return fmt.Errorf("replay: verify: %w", err)
	}
	c.tree.extraStored(extra, firstExtra)
	if err := c.endSnapshots(ctx, q, after); err != nil {
		return fmt.Errorf("replay: verify: snapshots: %w", err)
	}
	c.finish()
	c.tree.signedMarkers(c.markers)
	return nil
}

// keep fills v (when asked) with what the check knew at the log's end,
// when it read the log intact to its end with no problem found.
func (c *checker) keep(v *Verified, full bool) {
	if v == nil || c.report.ProblemCount > 0 || c.chain.damaged || c.tree.off || c.report.LastSeq == 0 {
		return
	}
	st, err := c.state.MarshalJSON()
	if err != nil {
		return
	}
	fr := c.tree.tree.Frontier()
	hexes := make([]string, len(fr))
	for i, h := range fr {
		hexes[i] = hex.EncodeToString(h[:])
	}
	*v = Verified{Seq: c.report.LastSeq, Hash: c.report.HeadHash, Frontier: hexes, Latest: c.clock.latest, LatestSeq: c.clock.latestSeq,
		State: st, MaxAt: c.at.max, BlockMinAt: c.at.blockMin, Snapshots: c.snapsDigest, At: c.clock.now, Full: full}
	if v.At.IsZero() {
		v.At = time.Now()
	}
}
