package ledger

// The default of every writer, the command line's and the Go API's alike:
// sign with the user's key from the trust store (package trust), keep the
// signed head there, and check the ledger against the store's pin of the
// root, pinning it on first use. An explicit WithSigner or Unsigned opts
// out; a reader (ReadOnly) never touches the trust store.

import (
	"fmt"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/store"
	"github.com/lockledger/lockledger/trust"
)

// ErrPinned: the trust store pins another ledger at the root
// (*trust.PinError); nothing was written.
var ErrPinned = trust.ErrPinned

// ErrNotPinned: an open with MustBePinned found its signing key not
// pinned for the ledger at the root (*trust.NotPinnedError).
var ErrNotPinned = trust.ErrNotPinned

type trustConfig struct {
	unsigned bool
	open     func() (*trust.Store, error) // the store given (WithTrustStore, WithTrustStoreFrom)
	notice   func(*trust.Pinned)
	mustPin  bool
}

// trusted is what a writer checks against the trust store: the store and
// the verifier key of the key it signs with.
type trusted struct {
	store    *trust.Store
	verifier string
	cfg      trustConfig
}

// Unsigned opens a writer without the trust store: no default key, no
// kept head, no pin, and nothing outside the root vouches for what it
// writes (the command line's --unsigned). An explicit WithSigner still
// signs.
func Unsigned() Option {
	return func(c *config) error { c.trust.unsigned = true; return nil }
}

// WithTrustStore is the trust store a writer uses instead of the one at
// trust.Dir(). With WithSigner it pins that signer's key for the ledger
// (without keeping heads); without, it is the store of the default key.
func WithTrustStore(s *trust.Store) Option {
	return given("WithTrustStore", s == nil, func(c *config) { c.trust.open = func() (*trust.Store, error) { return s, nil } })
}

// WithTrustStoreFrom is WithTrustStore with the store that open opens,
// called only once the open has found that it may write: a writer the
// database refuses (a role that may only read) leaves no trust store
// behind, not even its directory. A nil store from open is none given.
func WithTrustStoreFrom(open func() (*trust.Store, error)) Option {
	return given("WithTrustStoreFrom", open == nil, func(c *config) { c.trust.open = open })
}

// WithPinNotice has f told of a pin a writer's open made (the ledger
// trusted on first use, or another key pinned for it) instead of the
// logger, which gets it at Warn.
func WithPinNotice(f func(*trust.Pinned)) Option {
	return func(c *config) error { c.trust.notice = f; return nil }
}

// MustBePinned refuses a writer whose signing key the trust store does
// not already pin for the ledger at the root (*trust.NotPinnedError,
// ErrNotPinned), and pins nothing: for writes only the ledger's own key
// may make (a prune).
func MustBePinned() Option {
	return func(c *config) error { c.trust.mustPin = true; return nil }
}

// applyTrust sets a writer's signing from the trust store: the default key
// and the heads dir where no signer was given; it returns what the opened
// ledger is to be checked against (nil: nothing).
func (c *config) applyTrust(root string) (*trusted, error) {
	if c.readOnly || c.trust.unsigned {
		return nil, nil
	}
	var s *trust.Store
	if c.trust.open != nil {
		var err error
		if s, err = c.trust.open(); err != nil {
			return nil, err
		}
	}
	if c.signing.signer != nil {
		if s == nil {
			return nil, nil
		}
		if err := c.trustPinned(s, root); err != nil {
			return nil, err
		}
		return &trusted{store: s, verifier: checkpoint.VerifierKeyOf(c.signing.signer), cfg: c.trust}, nil
	}
	if s == nil {
		dir, err := trust.Dir()
		if err != nil {
			return nil, err
		}
		if s, err = trust.Open(dir, root); err != nil {
			return nil, err
		}
	}
	k, err := s.DefaultKey(root, c.group, c.logger)
	if err != nil {
		return nil, err
	}
	if err := c.trustPinned(s, root); err != nil {
		return nil, err
	}
	c.signing.signer, c.signing.signed = k.Signer, &checkpoint.Memory{}
	if c.signing.heads.Dir == "" {
		c.signing.heads = trust.Heads{Dir: s.HeadsDir()}
	}
	return &trusted{store: s, verifier: k.Verifier, cfg: c.trust}, nil
}

// trustPinned has the writer trust, for the ledger's signer events, the
// keys the store pins at root: the owner's key a fleet's host pinned out
// of band vouches for the registrations it made.
func (c *config) trustPinned(s *trust.Store, root string) error {
	keys, err := s.PinnedVerifiers(root)
	c.signing.trusted = append(c.signing.trusted, keys...)
	return err
}

// checkTrust checks the opened ledger against the store's pins of the
// root (see trust.Store.CheckPin), saying what it pinned. The target of an
// import (store.PinSkip) is checked once the ledger it takes is in.
func (l *Ledger) checkTrust(policy store.PinPolicy) error {
	t := l.trust
	if t == nil || policy == store.PinSkip {
		return nil
	}
	p, err := t.store.CheckPin(l.root, l.id, t.verifier, !t.cfg.mustPin)
	if err != nil || p == nil {
		return err
	}
	p.Shared = l.store.ManyHosts()
	if t.cfg.notice != nil {
		t.cfg.notice(p)
		return nil
	}
	for _, line := range p.Lines() {
		l.log.Warn(line, "ledger_id", p.LedgerID, "root", p.Root, "verifier_key", p.Verifier, "file", p.File)
	}
	return nil
}

// refuseNewLedger refuses a writer's open that would start a new ledger at
// root while the trust store pins a ledger there (a root's path reused):
// the pin check would refuse the new ledger once made, and a refused
// command leaves nothing behind, so it is refused before anything is made.
func (t *trusted) refuseNewLedger(root string) error {
	pins, err := t.store.PinsOf(root)
	if err != nil {
		return fmt.Errorf("reading %s: %w", t.store.PinsPath(), err)
	}
	if len(pins) == 0 {
		return nil
	}
	return &trust.PinError{Root: trust.Resolve(root), Pinned: pins[0].LedgerID, File: t.store.PinsPath()}
}
