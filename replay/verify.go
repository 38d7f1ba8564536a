package replay

import (
	"context"
	"fmt"
	"math"
	"time"
	"unsafe"

	"github.com/oklog/ulid/v2"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/schema"
	"github.com/lockledger/lockledger/store"
	"github.com/lockledger/lockledger/verify"
)

// rowCheck is one row with everything verify computes for it that does not
// depend on other rows: decoded, hashed both ways, validated. These run in
// parallel (see pipeline); the chain and the fold then take rows in order.
type rowCheck struct {
	row  *Row
	ev   *Event // nil when the body is not a JSON object
	derr error
	// selfOK: hash == ChainHash(position, prev_hash, body);
	// movedOK: hash == ChainHash(body seq, prev_hash, body), body seq != position.
	selfOK, movedOK bool
	schemaErr       error     // for intact rows only
	leaf            tlog.Hash // the Merkle leaf of the body
	// idMillis is the time inside event_id (Unix milliseconds; -1 when it
	// cannot be read); idBad: it differs from at's by more than
	// idTimeTolerance, or cannot be read.
	idMillis int64
	idBad    bool
}

// idTimeTolerance is how far the time inside event_id may be from at's.
// The ledger makes both from one reading of the clock (events.NewULID
// keeps the millisecond, truncated; its monotonic entropy changes the
// random part, never the time), so only another writer's rounding could
// differ.
const idTimeTolerance = 1 // millisecond

func (rc *rowCheck) precheck(h *chainHasher, ev *Event) {
	r := rc.row
	rc.leaf = checkpoint.LeafHash(r.Body)
	rc.ev, rc.derr = decodeLoose(r.Body, ev)
	rc.selfOK = h.matches(r.Seq, r.PrevHash, r.Body, r.Hash)
	if !rc.selfOK && rc.derr == nil && rc.ev.Seq != r.Seq {
		rc.movedOK = h.matches(rc.ev.Seq, r.PrevHash, r.Body, r.Hash)
	}
	if (rc.selfOK || rc.movedOK) && rc.derr == nil {
		rc.schemaErr = schema.ValidateEvent(rc.ev.Type, r.Body)
		if rc.schemaErr == nil {
			rc.checkID()
		}
	}
}

// checkID compares the time inside event_id with at (both schema-valid).
func (rc *rowCheck) checkID() {
	if rc.ev.Time.IsZero() {
		return // at is not a time: the schema says so
	}
	id, err := ulid.ParseStrict(rc.ev.EventID)
	if err != nil {
		// The schema's pattern admits a first character above 7, whose
		// time does not fit in a ULID's 48 bits.
		rc.idMillis, rc.idBad = -1, true
		return
	}
	rc.idMillis = int64(id.Time()) // 48 bits: no overflow
	d := rc.idMillis - rc.ev.Time.UnixMilli()
	rc.idBad = d > idTimeTolerance || d < -idTimeTolerance
}

// checker runs every per-event check of verify on a stream of rows and
// folds the events it can read.
type checker struct {
	report *verify.Report
	chain  *chain
	state  *State
	clock  clock
	hasher *chainHasher // for the sequential path
	// fromOne: the rows begin at seq 1, so the fold starts from the state
	// before any event and replay's own checks (overlaps, inconsistent
	// events, release tokens) hold: a whole ledger, or an export that
	// starts at seq 1.
	fromOne bool
	tree    *treeCheck
	// markers are the prunes and unprunes the rows hold (seq and type).
	markers []marker
	// snaps are the stored snapshots not yet reached, in seq order
	// (their states not read); folded is the first seq folded.
	snaps  []store.Snapshot
	folded int64
	// snapsDigest chains every snapshot of the fold from the first event
	// up to the fold's last (see snapshotsDigest).
	snapsDigest string
	// at: the times the fold has seen, as a snapshot records them.
	at atBounds
}

// newChecker's tree checks no checkpoints: the callers that have some
// replace it (building one lists its checkpoints in the report, so only
// that one may be built with them).
func newChecker(source, anchor string, fromStart bool, cfg verifyConfig) *checker {
	r := &verify.Report{Source: source}
	if fromStart {
		r.Genesis = anchor
	}
	bare := cfg
	bare.trust = nil
	return &checker{report: r, chain: newChain(anchor, fromStart, r), state: NewState(), clock: clock{skew: cfg.clockSkew, now: cfg.now()},
		hasher: new(chainHasher), fromOne: fromStart, tree: newTreeCheck(r, false, bare), at: atBounds{every: store.SnapshotEvery}}
}

// newLedgerChecker is newChecker for a ledger's rows: their stored
// hashes and the checkpoints checked, their times against the ledger's
// created_at.
func newLedgerChecker(ctx context.Context, q Querier, source, anchor string, fromStart bool, cfg verifyConfig) *checker {
	c := newChecker(source, anchor, fromStart, cfg)
	c.tree = newTreeCheck(c.report, true, cfg)
	var note string
	if c.clock.created, note = createdAt(ctx, q); note != "" {
		c.report.Notes = append(c.report.Notes, note)
	}
	return c
}

// apply takes a prechecked row in position order: chain position and
// links, indexed columns, schema; then folds it.
func (c *checker) apply(rc *rowCheck) {
	r, ev := rc.row, rc.ev
	if !c.chain.started && r.Seq == 1 {
		// An export from seq 1: nothing comes before it whatever its
		// first prev_hash (which the chain holds to --prev-hash when given).
		c.fromOne = true
	}
	intact := c.chain.step(rc)
	c.tree.step(rc)
	if !intact {
		// Already reported as modified; its content still folds, as the
		// log now reads.
		if ev != nil && ev.Type.Valid() && !ev.Time.IsZero() {
			c.fold(r, ev)
		}
		return
	}
	if rc.derr != nil {
		c.report.Add(verify.Problem{Seq: r.Seq, Line: r.Line, Kind: verify.KindSchema, Detail: "hash is valid but the body is not a readable event: " + rc.derr.Error()})
		return
	}
	if p := checkColumns(r, ev); p != nil {
		c.report.Add(*p)
	}
	if rc.schemaErr != nil {
		c.report.Add(verify.Problem{Seq: r.Seq, Line: r.Line, Kind: verify.KindSchema, Lock: ev.LockName, Detail: rc.schemaErr.Error()})
	} else {
		c.rowChecks(r, ev, rc)
	}
	if ev.Type == events.LedgerPruned || ev.Type == events.LedgerUnpruned {
		c.markers = append(c.markers, marker{seq: r.Seq, typ: ev.Type})
	}
	if ev.Type.Valid() && !ev.Time.IsZero() {
		c.fold(r, ev)
	}
}

// rowChecks are the checks of an intact, schema-valid event on its own.
func (c *checker) rowChecks(r *Row, ev *Event, rc *rowCheck) {
	if rc.idBad {
		detail := fmt.Sprintf("event_id %s is not a ULID whose time can be read", ev.EventID)
		if rc.idMillis >= 0 {
			detail = fmt.Sprintf("event_id %s holds the time %s but at is %s: the ledger makes both from one reading of the clock",
				ev.EventID, time.UnixMilli(rc.idMillis).UTC().Format("2006-01-02T15:04:05.000Z"), ev.At)
		}
		c.report.Add(verify.Problem{Seq: r.Seq, Line: r.Line, Kind: verify.KindEventIDTime, Lock: ev.LockName, Detail: detail})
	}
	if !ev.Time.IsZero() {
		c.clock.check(c, r, ev, !c.chain.damaged)
	}
	if (ev.Type == events.LockAcquired || ev.Type == events.LockStolen) && ev.FencingToken != ev.Seq {
		// The ledger's token is the acquiring event's own seq (the one
		// its hash covers): checked on every row, a slice's too.
		c.report.Add(verify.Problem{Seq: r.Seq, Line: r.Line, Kind: verify.KindFencingToken, Lock: ev.LockName, Detail: fmt.Sprintf(
			"%s with fencing_token %d: the ledger gives an acquisition its own seq, %d, as its token", ev.Type, ev.FencingToken, ev.Seq)})
	}
}

// row prechecks and applies one row (the sequential path).
func (c *checker) row(r *Row) {
	rc := &rowCheck{row: r}
	rc.precheck(c.hasher, &Event{})
	c.apply(rc)
}

func (c *checker) fold(r *Row, ev *Event) {
	ev.Body, ev.PrevHash, ev.Hash = r.Body, r.PrevHash, r.Hash
	c.state.Apply(ev)
	if c.folded == 0 {
		c.folded = r.Seq
	}
	c.at.see(r.Seq, ev.At)
	c.checkSnapshot(r)
}

// checkSnapshot compares the snapshot stored at r's seq, if any, with the
// fold so far: the event it follows and the state it holds. Snapshots of
// events before the fold's first (pruned since), of another encoding, or
// at a row that did not fold (reported as it is) are not compared:
// readers do not take them either.
func (c *checker) checkSnapshot(r *Row) {
	for len(c.snaps) > 0 && c.snaps[0].Seq < r.Seq {
		c.snaps = c.snaps[1:]
	}
	if len(c.snaps) == 0 || c.snaps[0].Seq != r.Seq {
		return
	}
	s := c.snaps[0]
	c.snaps = c.snaps[1:]
	if s.FromSeq != c.folded {
		return
	}
	c.snapsDigest = snapshotsDigest(c.snapsDigest, &s)
	if s.EventHash != r.Hash {
		c.report.Add(verify.Problem{Seq: r.Seq, Kind: verify.KindSnapshot, Detail: fmt.Sprintf(
			"the snapshot at seq %d follows an event whose hash was %s, but the event's hash is %s (a forged snapshot, or one a log restored from an older copy and written on left behind; `lockledger project` removes it)", r.Seq, s.EventHash, r.Hash)})
		return
	}
	// Readers bound their searches by these, whatever the state's encoding.
	if s.MaxAt != c.at.max || (s.MinAt != "" && s.MinAt != c.at.blockMin) {
		c.report.Add(verify.Problem{Seq: r.Seq, Kind: verify.KindSnapshot, Detail: fmt.Sprintf(
			"the snapshot at seq %d records its events' times as %s to %s (latest of all, earliest of its block), but they are %s to %s",
			r.Seq, s.MaxAt, s.MinAt, c.at.max, c.at.blockMin)})
	}
	if s.Version != snapshotVersion {
		return
	}
	if _, h := c.state.encodeSnapshot(); h != s.StateHash {
		c.report.Add(verify.Problem{Seq: r.Seq, Kind: verify.KindSnapshot, Detail: fmt.Sprintf(
			"the snapshot at seq %d is not the fold of events %d to %d: its state hash is %s, the fold's %s", r.Seq, s.FromSeq, r.Seq, s.StateHash, h)})
	}
}

// endSnapshots reports the snapshots past the log's end, and those after
// seq after whose stored state does not hash to what they recorded (read
// one at a time).
func (c *checker) endSnapshots(ctx context.Context, q Querier, after int64) error {
	for _, s := range c.snaps {
		if s.Seq > c.report.LastSeq {
			c.report.Add(verify.Problem{Seq: s.Seq, Kind: verify.KindSnapshot, Detail: fmt.Sprintf(
				"a snapshot at seq %d, past the log's last event (%d): left by a log cut or restored from an older copy; `lockledger project` removes it", s.Seq, c.report.LastSeq)})
		}
	}
	for s, err := range store.SnapshotsBefore(ctx, q, math.MaxInt64, "") {
		if err != nil {
			return err
		}
		if s.Seq <= after {
			break
		}
		if h := StateHash(s.State); h != s.StateHash {
			c.report.Add(verify.Problem{Seq: s.Seq, Kind: verify.KindSnapshot, Detail: fmt.Sprintf(
				"the snapshot at seq %d records the state hash %s, but its state hashes to %s", s.Seq, s.StateHash, h)})
		}
	}
	return nil
}

// malformed reports an export line that holds no event: the fold misses
// an event, so it is judged like a damaged chain.
func (c *checker) malformed(p verify.Problem) {
	c.report.Add(p)
	c.chain.damaged = true
}

// finish resolves the chain's end and reports replay anomalies.
func (c *checker) finish() {
	c.chain.end()
	c.clock.end(c.report)
	firstChain := int64(0)
	for _, p := range c.report.Problems {
		if p.Kind.Chain() && (firstChain == 0 || p.Seq < firstChain) {
			firstChain = p.Seq
		}
	}
	c.tree.end(c.chain.damaged, firstChain)
	c.report.Locks = c.state.Len()
	if !c.fromOne || c.chain.damaged || c.state.Events == 0 {
		// A slice starts from a state it does not know, and a damaged chain
		// explains any anomaly: both would only add noise.
		return
	}
	c.report.Replayed = true
	for _, a := range c.state.Anomalies {
		c.report.Add(verify.Problem{Seq: a.Seq, Kind: a.Kind, Lock: a.Lock, Detail: a.Detail})
	}
	c.report.ProblemCount += c.state.AnomalyCount - len(c.state.Anomalies)
}

// FoldingFrom gives VerifyLedger the fold of a pruned ledger's archived
// events (State.MarshalJSON of the fold of every event before the live
// log, see archive.Fold): the fold of the live log goes on from it, and
// VerifyLedger returns the whole log's. The caller has checked that the
// archives and the live log are one log. Unpruned ledgers ignore it.
func FoldingFrom(state []byte) VerifyOption { return func(c *verifyConfig) { c.archived = state } }

// decodeLoose decodes what it can into ev (zero): an error only when the
// body is not a JSON object at all. Type and time are checked by the
// callers. The event's strings share body's memory (see decodeFastString).
func decodeLoose(body []byte, ev *Event) (*Event, error) {
	if err := decodeBody(unsafe.String(unsafe.SliceData(body), len(body)), ev); err != nil {
		return nil, err
	}
	if t, err := events.ParseTime(ev.At); err == nil {
		ev.Time = t
	}
	return ev, nil
}

// VerifyLedger checks the whole event log of a ledger in one pass in seq
// order: the chain from genesis, seq contiguity, every body against its
// schema and the indexed columns against the body. Decoding, hashing and
// schema validation run beside the database reads (see pipeline); the
// chain and the fold take the rows in order. Every event is also checked
// against the time inside its event_id, its fencing token, and the times
// before it and the ledger's created_at (meta), with the tolerance of
// ClockSkew. It returns the report (not
// finished: (*ledger.Ledger).Verify, the whole check of a ledger, adds the
// storage and projection checks, then calls Finish) and the fold of every
// readable event, for the projection check: nil for a pruned ledger,
// whose fold starts after the archived events (see startPruned), unless
// FoldingFrom gives the fold of those.
//
// While it runs, the garbage collector's target is raised (see relaxGC).
func VerifyLedger(ctx context.Context, q Querier, source, genesis string, opts ...VerifyOption) (*verify.Report, *State, error) {
	defer relaxGC(verifyGCPercent)()
	cfg := newVerifyConfig(opts)
	c := newLedgerChecker(ctx, q, source, genesis, true, cfg)
	pruned, err := c.startPruned(ctx, q)
	if err != nil {
		return nil, nil, fmt.Errorf("replay: verify: %w", err)
	}
	if pruned && cfg.archived != nil {
		// A fresh decoding each call: a write that runs this again (a
		// retried transaction) must not fold the live log twice.
		if err := c.state.UnmarshalJSON(cfg.archived); err != nil {
			return nil, nil, fmt.Errorf("replay: verify: the archived events' fold: %w", err)
		}
		c.fromOne = true
	}
	if err := c.run(ctx, q, 0); err != nil {
		return nil, nil, err
	}
	if pruned && cfg.archived == nil {
		// The fold starts after the archive: the projections cannot be
		// judged by it.
		return c.report, nil, nil
	}
	if pruned {
		return c.report, c.state, nil
	}
	c.keep(cfg.keep, true)
	return c.report, c.state, nil
}
