package ledger

// The ledger's signers (see replay/signers.go): an owner registers and
// revokes the keys that sign the ledger's checkpoints, each by an event
// carrying its signed statement; verify trusts every key an owner it
// trusts registered. A writer counts the registrations its own key and
// the keys it trusts (WithTrustedKeys) vouch for, and nothing else: one
// whose key they do not register (where they register any) signs its
// head alone, promising nothing.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/store"
)

// ErrNotOwner: a signer change asked of a writer whose key is not an
// owner of the ledger's signers.
var ErrNotOwner = errors.New("not an owner of the ledger's signers")

// ErrNotSigner: a signer removal of a key the ledger does not register.
var ErrNotSigner = errors.New("not a signer of the ledger")

// AddSigner registers key (a verifier key) as a signer of the ledger
// under role, with a statement signed by this Ledger's key. The first
// registration of a ledger first registers the writer's own key as its
// owner; after it, only an owner registered there may add or remove
// signers. It returns the seq of the key's signer_added.
func (l *Ledger) AddSigner(ctx context.Context, id Identity, key, role string) (int64, error) {
	return l.changeSigner(ctx, id, checkpoint.SignerAdd, key, role)
}

// RemoveSigner revokes key: its checkpoints of the log past this event
// vouch for nothing. It returns the seq of the signer_removed.
func (l *Ledger) RemoveSigner(ctx context.Context, id Identity, key string) (int64, error) {
	return l.changeSigner(ctx, id, checkpoint.SignerRemove, key, "")
}

// WithTrustedKeys names verifier keys, besides its own signing key, that
// this Ledger trusts to vouch for the ledger's signer events: the
// owner's key a host pinned (out of band), as verify trusts it. A
// registration counts for this writer only when a trusted key, or an
// owner such a key registered, signed its statement; whoever can append
// to the database can append a registration, but not sign it.
func WithTrustedKeys(keys ...note.Verifier) Option {
	return given("WithTrustedKeys", slices.Contains(keys, nil), func(c *config) { c.signing.trusted = append(c.signing.trusted, keys...) })
}

// Signers is the ledger's signer set as the keys this Ledger trusts (its
// signing key and WithTrustedKeys) make it, with notes on the events
// that did not count. A Ledger that trusts no key (a reader opened
// without any) is shown the set the ledger claims for itself: the first
// registration's key taken as its owner, which nothing vouches for.
func (l *Ledger) Signers(ctx context.Context) ([]replay.Signer, []string, error) {
	tx, err := l.BeginRead(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer tx.Rollback()
	regs, err := replay.ReadRegistrations(ctx, tx)
	if err != nil {
		return nil, nil, err
	}
	trusted := l.trustedKeys()
	if len(trusted) == 0 && len(regs) > 0 {
		v, err := checkpoint.NewVerifier(regs[0].Key)
		if err != nil {
			return nil, []string{fmt.Sprintf("the first signer event (seq %d) names no key: %v", regs[0].Seq, err)}, nil
		}
		s, notes := replay.FoldSigners(checkpoint.Origin(l.id), []note.Verifier{v}, regs)
		return s, append(notes, fmt.Sprintf("no key trusted: the first signer event's key (seq %d) is taken as the owner it names", regs[0].Seq)), nil
	}
	s, notes := replay.FoldSigners(checkpoint.Origin(l.id), trusted, regs)
	return s, notes, nil
}

// trustedKeys are the keys this Ledger trusts to vouch for signer
// events: its own signing key and those of WithTrustedKeys.
// Each key once: a note does not verify against a list naming a key
// twice (a writer's pin of its own key).
func (l *Ledger) trustedKeys() []note.Verifier {
	keys := l.signing.trusted
	if l.signing.signer != nil {
		if v, err := checkpoint.NewVerifier(checkpoint.VerifierKeyOf(l.signing.signer)); err == nil {
			keys = append(slices.Clip(keys), v)
		}
	}
	var out []note.Verifier
	for _, k := range keys {
		if id := checkpoint.VerifierID(k); !slices.ContainsFunc(out, func(o note.Verifier) bool { return checkpoint.VerifierID(o) == id }) {
			out = append(out, k)
		}
	}
	return out
}

// trustedSigners folds regs as this Ledger's trusted keys vouch for
// them: a registration no trusted key (nor an owner one registered)
// signed counts for nothing, whoever appended it first.
func (l *Ledger) trustedSigners(regs []replay.Registration) []replay.Signer {
	if len(regs) == 0 {
		return nil
	}
	s, _ := replay.FoldSigners(checkpoint.Origin(l.id), l.trustedKeys(), regs)
	return s
}

func (l *Ledger) changeSigner(ctx context.Context, id Identity, action, key, role string) (int64, error) {
	if l.signing.signer == nil {
		return 0, fmt.Errorf("ledger: signer %s: %w", action, ErrNoSigner)
	}
	key = strings.TrimSpace(key)
	_, err := checkpoint.NewVerifier(key)
	if err != nil {
		return 0, events.Invalid("key", key, err.Error())
	}
	if action == checkpoint.SignerAdd {
		if err := events.ValidText("role", role, 64, false); err != nil {
			return 0, err
		}
		if role == "" || strings.ContainsAny(role, " \t") {
			return 0, events.Invalid("role", role, "must be one word (owner may add and remove signers)")
		}
	}
	own := checkpoint.VerifierKeyOf(l.signing.signer)
	origin := checkpoint.Origin(l.id)
	var seq int64
	err = l.update(ctx, func(w *writeTx) (error, error) {
		l.signing.notSigner = nil // the set may change here: read it at the next checkpoint due
		rid, err := l.resolve(id, w.now)
		if err != nil {
			return nil, err
		}
		regs, err := replay.ReadRegistrations(ctx, w.q)
		if err != nil {
			return nil, err
		}
		signers := l.trustedSigners(regs)
		standing := func(k string, owner bool) *replay.Signer {
			for i := range signers {
				s := &signers[i]
				if s.Removed == 0 && s.Key == k && (!owner || s.Role == events.RoleOwner) {
					return s
				}
			}
			return nil
		}
		appendOne := func(typ events.Type, act, k, r string) error {
			st, err := checkpoint.SignStatement(checkpoint.SignerStatement(origin, act, r, k), l.signing.signer)
			if err != nil {
				return err
			}
			ev, err := w.append(typ, rid, &events.Signer{Key: k, Role: r, Statement: st})
			if err == nil {
				seq = ev.Seq
			}
			return err
		}
		switch {
		case len(signers) == 0 && action == checkpoint.SignerAdd:
			// No registration this writer trusts: as on a ledger with
			// none, its own key is registered as the owner first.
			if err := appendOne(events.SignerAdded, checkpoint.SignerAdd, own, events.RoleOwner); err != nil {
				return nil, err
			}
			if key == own {
				return nil, nil
			}
		case standing(own, true) == nil:
			return nil, fmt.Errorf("%w (%w)", events.Invalid("signing key", own, "is not an owner the ledger's signers register: only an owner adds or removes signers"), ErrNotOwner)
		}
		if action == checkpoint.SignerRemove {
			s := standing(key, false)
			if s == nil {
				return nil, fmt.Errorf("%w (%w)", events.Invalid("key", key, "is not a signer the ledger registers"), ErrNotSigner)
			}
			role = s.Role
			if key == own && !slices.ContainsFunc(signers, func(o replay.Signer) bool { return o.Removed == 0 && o.Key != own && o.Role == events.RoleOwner }) {
				return nil, events.Invalid("key", key, "is the last owner: add another owner first")
			}
			return nil, appendOne(events.SignerRemoved, checkpoint.SignerRemove, key, role)
		}
		if s := standing(key, false); s != nil && s.Role == role {
			seq = s.Added
			return nil, nil
		}
		return nil, appendOne(events.SignerAdded, checkpoint.SignerAdd, key, role)
	})
	return seq, err
}

// registeredSigner reports whether this writer's key may store the
// checkpoints its policy makes due: always on a ledger whose signer
// events its trusted keys vouch for none of (it says once that they name
// an owner it does not trust); otherwise only while the registrations
// they vouch for (see trustedSigners) name the key and have not removed
// it. q is the write transaction, so the answer holds for the log being
// signed. A writer found not to be a signer reads the registrations
// again only once its policy would make a checkpoint due since (events
// or time), so that an appending host pays one indexed query per
// checkpoint interval, and is registered (or removed) from its next due
// checkpoint on.
func (l *Ledger) registeredSigner(ctx context.Context, q store.Querier, seq int64, now time.Time) (bool, error) {
	if n := l.signing.notSigner; n != nil && seq >= n.seq && seq-n.seq < l.signing.every && now.Sub(n.at) < l.signing.interval {
		return false, nil
	}
	l.signing.notSigner = nil
	regs, err := replay.ReadRegistrations(ctx, q)
	if err != nil || len(regs) == 0 {
		return true, err
	}
	signers := l.trustedSigners(regs)
	if len(signers) == 0 {
		if !l.signing.untrusted {
			l.signing.untrusted = true
			l.log.Warn("the ledger's signer events name an owner none of this writer's trusted keys vouch for: signing as on a ledger that registers no signers; "+
				"if the owner is genuine, pin its key (lockledger trust pin --ledger-id ID --verifier-key OWNER_KEY)",
				"ledger_id", l.id, "signer_events", len(regs), "first_seq", regs[0].Seq)
		}
		return true, nil
	}
	id := checkpoint.KeyID(l.signing.signer.Name(), l.signing.signer.KeyHash())
	if slices.ContainsFunc(signers, func(s replay.Signer) bool { return s.Removed == 0 && s.ID() == id }) {
		return true, nil
	}
	l.signing.notSigner = &dueAt{seq: seq, at: now}
	return false, nil
}

// verifySigners adds to t the keys registered by the ledger's signer
// events that its trusted keys vouch for (see replay.FoldSigners), and
// returns the notes on the events that do not count.
func (l *Ledger) verifySigners(ctx context.Context, q store.Querier, t *replay.Trust) ([]string, error) {
	if len(t.Verifiers) == 0 {
		return nil, nil
	}
	regs, err := replay.ReadRegistrations(ctx, q)
	if err != nil || len(regs) == 0 {
		return nil, err
	}
	signers, notes := replay.FoldSigners(checkpoint.Origin(l.id), t.Verifiers, regs)
	t.WithSigners(signers)
	return notes, nil
}
