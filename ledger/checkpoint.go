package ledger

// Signed checkpoints: a tree head signed with a key kept outside the root,
// stored in the ledger and copied to witnesses, so that rewriting the log
// also needs the key, or every witness. See packages checkpoint and
// witness.

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/store"
	"github.com/lockledger/lockledger/trust"
)

// Defaults of the automatic checkpoints a writer with a key signs.
const (
	DefaultCheckpointEvery    = 1000
	DefaultCheckpointInterval = time.Minute
)

type signing struct {
	signer    note.Signer
	witnesses Witnesses // WithWitnesses; nil: none
	every     int64
	interval  time.Duration
	// signed is what this process signed and committed: with no witness,
	// the only earlier head a signer holds out of the ledger's reach.
	signed *checkpoint.Memory
	heads  trust.Heads // WithHeads
	// notSigner is when (the log's size, the clock) this writer last found
	// the ledger's signers registered without its key: until its policy
	// would make a checkpoint due again, it does not read them again.
	notSigner *dueAt
	// trusted are the keys besides its own that this writer trusts to
	// vouch for the ledger's signer events (WithTrustedKeys).
	trusted []note.Verifier
	// untrusted: this writer said that the ledger's signer events name an
	// owner none of its trusted keys vouch for.
	untrusted bool
}

type dueAt struct {
	seq int64
	at  time.Time
}

// WithSigner makes every writer sign checkpoints with s: automatically
// (see WithCheckpointPolicy) and on Checkpoint, each only on a log that
// extends what s signed before (a signer from checkpoint.NewSigner reads
// that from the witnesses too).
func WithSigner(s note.Signer) Option {
	return given("WithSigner", s == nil, func(c *config) { c.signing.signer, c.signing.signed = s, &checkpoint.Memory{} })
}

// WithHeads keeps the ledger's latest signed head in dir (trust.Heads),
// one per root: with a signer, every committed write signs one and stores
// it there, and no write commits unless its tree extends the head kept
// there and the head could be kept once it commits.
func WithHeads(dir string) Option {
	return func(c *config) error { c.signing.heads = trust.Heads{Dir: dir}; return nil }
}

// heads is where this root's head is kept (WithHeads): per ledger and per
// root, so that a copy of the root keeps a head of its own.
func (l *Ledger) heads() trust.Heads {
	h := l.signing.heads
	if h.Dir != "" && h.Root == "" {
		h.Root = l.root
	}
	return h
}

// WithCheckpointPolicy sets when a writer with a key signs a checkpoint on
// its own: once every events events, and with the first write after
// interval has passed since the last checkpoint. Zero keeps a default.
func WithCheckpointPolicy(every int64, interval time.Duration) Option {
	var err error
	switch {
	case every < 0:
		err = events.Invalid("checkpoint every", fmt.Sprint(every), "must be at least 1 event")
	case interval < 0:
		err = events.Invalid("checkpoint interval", interval.String(), "must not be negative")
	}
	return checked(err != nil, err, func(c *config) {
		c.signing.every, c.signing.interval = cmp.Or(every, c.signing.every), cmp.Or(interval, c.signing.interval)
	})
}

// Checkpointed is a checkpoint just signed and stored.
type Checkpointed struct {
	Size int64     `json:"size"`
	Root tlog.Hash `json:"root"`
	Key  string    `json:"key"`
	Time time.Time `json:"time"`
	Note string    `json:"note"`
	// Witnesses are the paths it was copied to: the file written, for a
	// directory.
	Witnesses []string `json:"witnesses"`
	Cosigned  []string `json:"cosigned,omitempty"` // the URLs of the witnesses that cosigned it
	headOnly  bool     // signed for the heads witness alone, not stored
}

// ErrNoSigner: a checkpoint asked of a Ledger opened without a key.
var ErrNoSigner = errors.New("no signing key")

// Checkpoint signs a checkpoint of the whole log now, stores it and copies
// it to every witness, after letting the writer mutex go. A failed copy is
// a *witness.Error, after the others were tried.
func (l *Ledger) Checkpoint(ctx context.Context) (*Checkpointed, error) {
	if l.signing.signer == nil {
		return nil, fmt.Errorf("ledger: checkpoint: %w", ErrNoSigner)
	}
	var cp *Checkpointed
	err := l.update(ctx, func(w *writeTx) (error, error) {
		seq, _, err := store.Head(ctx, w.q, l.genesis)
		if err != nil {
			return nil, err
		}
		if seq == 0 {
			return nil, fmt.Errorf("ledger: checkpoint: the ledger holds no events yet; nothing to sign")
		}
		if cp, err = l.signCheckpoint(ctx, w.q, seq, w.now, false, true); err != nil {
			return nil, err
		}
		w.rows, w.stored = true, cp
		return nil, nil
	})
	if err != nil {
		return nil, err
	}
	// The head is kept (keepHead), then handed to the witnesses, with the
	// writer mutex let go.
	return cp, errors.Join(l.keepHead(cp), l.afterCommit(ctx, cp, false))
}

// dueCheckpoint signs and stores a checkpoint of the first seq events in
// the write transaction q when the policy says one is due; nil otherwise.
func (l *Ledger) dueCheckpoint(ctx context.Context, q store.PreparedTx, seq int64, now time.Time) (*Checkpointed, error) {
	if l.signing.signer == nil || seq == 0 {
		return nil, nil
	}
	size, note, err := store.LastCheckpointNote(ctx, q)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	t, own := l.ownCheckpoint(note, size, seq)
	due := err != nil || !own || size != seq && (seq-size >= l.signing.every || now.Sub(t) >= l.signing.interval)
	if due {
		// Only appends where this writer is no registered signer: a stored
		// checkpoint would carry a promise this host, idle while others
		// write, could not keep.
		if due, err = l.registeredSigner(ctx, q, seq, now); err != nil {
			return nil, err
		}
	}
	switch {
	case due:
		return l.signCheckpoint(ctx, q, seq, now, true, true)
	case l.signing.heads.Dir == "":
		return nil, nil
	}
	return l.signCheckpoint(ctx, q, seq, now, false, false) // the head alone
}

// signCheckpoint signs and stores a checkpoint of the first seq events,
// once the tree is proven to extend what the signer signed before (see
// extendingTree). One signed on the writer's own carries its policy: the
// promise that verify holds later events to. Without row, it is signed
// for the heads witness alone (WithHeads), not stored.
func (l *Ledger) signCheckpoint(ctx context.Context, q store.PreparedTx, seq int64, now time.Time, auto, row bool) (*Checkpointed, error) {
	root, err := l.extendingTree(ctx, q, l.id, seq)
	if err != nil {
		return nil, fmt.Errorf("ledger: checkpoint: %w", err)
	}
	c := checkpoint.Checkpoint{Origin: checkpoint.Origin(l.id), Size: seq, Root: root, Time: now}
	if auto {
		c.NextEvery, c.NextWithin = l.signing.every, l.signing.interval
	}
	msg, err := checkpoint.Sign(c, l.signing.signer)
	if err != nil {
		return nil, fmt.Errorf("ledger: checkpoint: sign: %w", err)
	}
	cp := &Checkpointed{Size: seq, Root: root, Key: l.signing.signer.Name(), Time: now, Note: string(msg), Witnesses: []string{}, headOnly: !row}
	if row {
		if err := store.InsertCheckpoint(ctx, q, seq, root.String(), cp.Note, cp.Key, events.FormatTime(now)); err != nil {
			return nil, fmt.Errorf("ledger: checkpoint: store: %w", err)
		}
	}
	return cp, nil
}

// extendingTree is the root of the tree of ledger id's first size events
// in q, once proven to extend every checkpoint of it the signer signed
// before and kept out of the ledger's reach: the last one on each witness
// that the signer's own key verifies, and the last this process committed.
// The checkpoints table is not among them: whoever can write ROOT can
// delete its rows. A witness that cannot be read is a warning, as a failed
// copy to it is. A *checkpoint.NotExtendedError fails the whole write.
func (l *Ledger) extendingTree(ctx context.Context, q store.Querier, id string, size int64) (tlog.Hash, error) {
	r := store.TxTreeReader(ctx, q)
	root, err := tlog.TreeHash(size, r)
	if err != nil {
		return root, fmt.Errorf("the tree of %d events: %w", size, err)
	}
	c := checkpoint.Checkpoint{Origin: checkpoint.Origin(id), Size: size, Root: root}
	earlier := l.signing.signed.Earlier(c.Origin, "signed by this process")
	if v := checkpoint.VerifierOf(l.signing.signer); v != nil {
		if l.signing.witnesses != nil {
			// Bounded well inside the time PostgreSQL lets a writer's
			// transaction sit idle (see store/postgres): a witness that is
			// slow to read is a warning, not a failed write.
			wctx, cancel := context.WithTimeout(ctx, l.busy/4)
			found, err := l.signing.witnesses.Last(wctx, id, v)
			cancel()
			if err != nil {
				l.log.Warn("could not read a witness's last checkpoint; checking against the others", "err", err)
			}
			earlier = append(earlier, found...)
		}
		kept, err := l.heads().Earlier(id, v)
		if err != nil {
			return root, err
		}
		earlier = append(earlier, kept...)
	}
	return root, checkpoint.CheckExtends(c, r, earlier...)
}

// notExtended: err refuses a log that no longer extends what was signed
// (or whose head kept by WithHeads cannot be read to prove it does).
func notExtended(err error) bool {
	var e *checkpoint.NotExtendedError
	var h *trust.HeadError
	return errors.As(err, &e) || errors.As(err, &h)
}

// keepHead remembers cp as signed by this process and keeps its head
// (WithHeads).
func (l *Ledger) keepHead(cp *Checkpointed) error {
	l.signing.signed.Remember(checkpoint.Checkpoint{Origin: checkpoint.Origin(l.id), Size: cp.Size, Root: cp.Root, Time: cp.Time})
	where, err := l.heads().Store(l.id, cp.Size, cp.Note, checkpoint.VerifierOf(l.signing.signer))
	if where != "" {
		cp.Witnesses = append(cp.Witnesses, where)
	}
	return err
}

// publishQuietly publishes, as Checkpoint does, a checkpoint a write made
// on its own: the write succeeded, so a witness that failed is a warning. The head is kept
// here, before the write returns; the copies to the witnesses and the
// cosignatures are left to the publishing worker (publishLater), so that
// the write's caller never waits for a witness.
func (l *Ledger) publishQuietly(ctx context.Context, cp *Checkpointed) {
	if cp == nil {
		return
	}
	if err := l.keepHead(cp); err != nil {
		// The write committed, and its head was checked keepable before
		// (trust.Heads.Earlier): what failed here is passing (another
		// Store stopped past its wait, a full disk), and the next write
		// either keeps a later head or fails before it commits.
		l.log.Error("could not keep the signed head outside the root (the write stands)", "size", cp.Size, "err", err)
	}
	if cp.headOnly || l.signing.witnesses == nil {
		return
	}
	l.publishLater(cp)
}

// waitPublishing waits for witness copies still under way, at most the
// witness timeout.
func (l *Ledger) waitPublishing() {
	if l.signing.witnesses != nil {
		l.signing.witnesses.Wait()
	}
}
