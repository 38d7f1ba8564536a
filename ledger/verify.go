package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/store"
	"github.com/lockledger/lockledger/verify"
)

// VerifyOption tunes Verify.
type VerifyOption func(*verifyConfig)

type verifyConfig struct {
	full     bool
	trust    *replay.Trust
	skew     time.Duration
	snapshot *sql.Tx
	from     *replay.Verified
	lookup   func(id string) (*replay.Verified, error)
	keep     *replay.Verified
}

// From makes Verify check only the events after v, a head an earlier
// Verify of this ledger found intact (kept with KeepVerified, by the
// verifier, outside the database): see replay.VerifyLedgerFrom for what
// that proves and what it leaves to a check of the whole log. The
// database file's pages are not read (only its append-only guards are
// checked); the projections are checked as always. v of another ledger,
// or one that cannot be verified from (see replay.Verified.Check), is an
// error.
func From(v *replay.Verified) VerifyOption { return func(c *verifyConfig) { c.from = v } }

// FromKept is From with the head lookup returns for the ledger's id (nil:
// none, the whole log is checked), for a caller that keeps heads by
// ledger and has not opened it.
func FromKept(lookup func(id string) (*replay.Verified, error)) VerifyOption {
	return func(c *verifyConfig) { c.lookup = lookup }
}

// KeepVerified has Verify fill v with the head it verified, when the
// report is OK (v.Seq 0 otherwise): the next Verify may start From it.
func KeepVerified(v *replay.Verified) VerifyOption { return func(c *verifyConfig) { c.keep = v } }

// FullStorageCheck makes Verify run SQLite's integrity_check, which also
// compares every index with its table, instead of its quick_check.
func FullStorageCheck() VerifyOption { return func(c *verifyConfig) { c.full = true } }

// CheckAgainst makes Verify check the log against t's checkpoints, verifier
// keys and expected heads, besides the checkpoints stored in the ledger
// (which are listed, and count only with a verifier key), and, with
// witness keys (t.Cosigners), the cosignatures the ledger keeps. t's LedgerID is
// the ledger's own; t itself is left as it is.
func CheckAgainst(t *replay.Trust) VerifyOption { return func(c *verifyConfig) { c.trust = t } }

// AllowClockSkew sets how far back the clock may step between events
// before it is damage (replay.ClockSkew); replay.DefaultClockSkew otherwise.
func AllowClockSkew(d time.Duration) VerifyOption { return func(c *verifyConfig) { c.skew = d } }

// InSnapshot makes Verify read the ledger in tx, a transaction of
// BeginRead, so that what the caller reads there agrees with the report.
// Without it Verify takes a snapshot of its own.
func InSnapshot(tx *sql.Tx) VerifyOption { return func(c *verifyConfig) { c.snapshot = tx } }

// Verify checks the whole ledger as lockledger verify does, in one
// snapshot taken without the writer lock: the event log from genesis
// (chain, seq, schemas, indexed columns, Merkle hashes, checkpoints,
// replay; see replay.VerifyLedger), the database itself (the engine's CheckStorage:
// SQLite's own check of the file and the append-only triggers), and the
// projections against the replay of every event (checkProjection: the
// locks table, lock_holders and the lock files). Damage is in the finished
// report, and a database too damaged to read is a report too (Unreadable):
// an error means the check could not be made (ctx ended, the snapshot or
// the stored checkpoints could not be read).
func (l *Ledger) Verify(ctx context.Context, opts ...VerifyOption) (*verify.Report, error) {
	c := verifyConfig{skew: replay.DefaultClockSkew}
	for _, o := range opts {
		o(&c)
	}
	tx := c.snapshot
	if tx == nil {
		var err error
		if tx, err = l.BeginRead(ctx); err != nil {
			return nil, fmt.Errorf("ledger: verify: %w", err)
		}
		defer tx.Rollback()
	}
	trust := replay.Trust{}
	if c.trust != nil {
		trust = *c.trust
	}
	trust.LedgerID = l.id
	stored, err := store.StoredCheckpoints(ctx, tx, 0, 0)
	if err != nil {
		return nil, err
	}
	signerNotes, err := l.verifySigners(ctx, tx, &trust)
	if err != nil {
		return nil, err
	}
	trust.Checkpoints = slices.Clip(trust.Checkpoints)
	for _, s := range stored {
		trust.Checkpoints = append(trust.Checkpoints, replay.NoteSource{Source: fmt.Sprintf("ledger checkpoint #%d", s.ID), Note: s.Note, Carried: true, Row: true, Size: s.Size})
	}
	if len(trust.Cosigners) > 0 {
		cos, err := store.StoredCosignatures(ctx, tx)
		if err != nil {
			return nil, err
		}
		trust.Cosignatures = slices.Clip(trust.Cosignatures)
		for _, c := range cos {
			trust.Cosignatures = append(trust.Cosignatures, replay.NoteSource{Source: fmt.Sprintf("ledger cosignature #%d", c.ID), Note: c.Note, Carried: true, Size: c.Size})
		}
	}
	// SQLite's check reads the whole file once more: it runs beside the
	// read of the events, on a connection of its own. Its snapshot may be
	// a later one, which changes nothing about the file being sound.
	if c.lookup != nil && c.from == nil {
		if c.from, err = c.lookup(l.id); err != nil {
			return nil, err
		}
	}
	if c.from != nil && c.from.LedgerID != l.id {
		return nil, fmt.Errorf("ledger: verify: the head verified before is of ledger %q, not %q", c.from.LedgerID, l.id)
	}
	if c.from != nil {
		// A head that cannot be verified from is the caller's, not damage
		// to the ledger.
		if err := c.from.Check(); err != nil {
			return nil, fmt.Errorf("ledger: verify: %w", err)
		}
	}
	// A log that no longer holds the head verified before is checked
	// whole, which explains what happened to it; the head's own finding
	// is the damage only when nothing else is (a re-chained log that
	// nothing signed).
	var lost *verify.Problem
	var wholeNote string
	if c.from != nil {
		// A log too damaged to read the head from is checked whole, and
		// the report says why.
		if ok, p, note, err := replay.CheckVerifiedHead(ctx, tx, c.from); err != nil || !ok {
			c.from, lost, wholeNote = nil, p, note
		}
	}
	level := store.StorageQuick
	switch {
	case c.from != nil:
		level = store.StorageGuards
	case c.full:
		level = store.StorageFull
	}
	storage := &verify.Report{}
	checked := make(chan error, 1)
	go func() { checked <- l.store.CheckStorage(ctx, l.store, level, storage) }()
	var kept replay.Verified
	ropts := []replay.VerifyOption{replay.ClockSkew(c.skew), replay.VerifyingClock(l.now), replay.WithTrust(&trust), replay.Keep(&kept)}
	var rep *verify.Report
	var st *replay.State
	if c.from != nil {
		rep, st, err = replay.VerifyLedgerFrom(ctx, tx, l.Source(), l.genesis, c.from, ropts...)
	} else {
		rep, st, err = replay.VerifyLedger(ctx, tx, l.Source(), l.genesis, ropts...)
	}
	if serr := <-checked; serr != nil {
		return nil, serr
	}
	if err != nil {
		// Too damaged to read: say so in the report, with what SQLite's own
		// check finds.
		rep, st = &verify.Report{Source: l.Source(), Genesis: l.genesis, Unreadable: true}, nil
		if err := rep.ReadFailure(ctx, "the events", err); err != nil {
			return nil, err
		}
	}
	rep.LedgerID = l.id
	rep.Notes = append(rep.Notes, signerNotes...)
	if wholeNote != "" {
		rep.Notes = append(rep.Notes, wholeNote)
	}
	for _, p := range storage.Problems {
		rep.Add(p)
	}
	if st != nil {
		if err := l.checkProjection(ctx, tx, st, rep); err != nil {
			return nil, err
		}
	}
	if lost != nil {
		if explained(rep, lost.Seq) {
			rep.Notes = append(rep.Notes, fmt.Sprintf("the whole log was checked: %s", lost.Detail))
		} else {
			rep.Add(*lost)
		}
	}
	rep.Finish()
	if c.keep != nil && rep.OK && kept.Seq > 0 {
		kept.LedgerID = l.id
		*c.keep = kept
	}
	return rep, nil
}

// explained: the report names damage to the log at or before seq, which
// accounts for a head verified there that the log no longer holds.
func explained(rep *verify.Report, seq int64) bool {
	for _, p := range rep.Problems {
		if p.Kind.Chain() && p.Seq <= seq {
			return true
		}
	}
	return false
}
