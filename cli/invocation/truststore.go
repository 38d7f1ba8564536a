package invocation

import (
	"fmt"

	"github.com/lockledger/lockledger/trust"
)

// EnvUnsigned set to 1 is --unsigned.
const EnvUnsigned = "LOCKLEDGER_UNSIGNED"

// TrustStore is the user's trust store for the root, opened once.
func (g *Globals) TrustStore() (*trust.Store, error) {
	if g.trust != nil {
		return g.trust, nil
	}
	dir, err := trust.Dir()
	if err != nil {
		return nil, err
	}
	if g.trust, err = trust.Open(dir, g.Root); err != nil {
		return nil, err
	}
	return g.trust, nil
}

// RootPins is the trust store and its pins of the root.
func (g *Globals) RootPins() (*trust.Store, []trust.Pin, error) {
	s, err := g.TrustStore()
	if err != nil {
		return nil, nil, err
	}
	pins, err := s.PinsOf(g.Root)
	return s, pins, err
}

// Trusting: writers sign with the trust store's key (or the group's), pin
// the ledger and keep its head; verify checks against them. Not with an
// explicit --signing-key (today's behaviour) nor with --unsigned.
func (g *Globals) Trusting() bool {
	return g.Sign.Key == "" && !g.Sign.Unsigned
}

// pinNotice says what a writer's open pinned in the trust store, once, on
// stderr even with --quiet: trusting a ledger on first use is a security
// event.
func (g *Globals) pinNotice(p *trust.Pinned) {
	for _, line := range p.Lines() {
		g.SayError(line)
	}
}

// Sayf prints one line on stderr, unless --quiet.
func (g *Globals) Sayf(format string, args ...any) {
	if g.Quiet {
		return
	}
	g.SayError(fmt.Sprintf(format, args...))
}

// Heads is the trust store's heads witness for the root at root: a head
// per ledger and per root, so that a copy of a root keeps its own.
func Heads(s *trust.Store, root string) trust.Heads {
	return trust.Heads{Dir: s.HeadsDir(), Root: trust.Resolve(root)}
}

// VerifiedOf is where the trust store keeps what this user's verifies of
// the ledgers at root found intact.
func VerifiedOf(s *trust.Store, root string) trust.Verified {
	return trust.Verified{Dir: s.VerifiedDir(), Root: trust.Resolve(root)}
}

// DropHeads moves aside the signed heads the trust store keeps of the
// ledgers pinned at the root, for project --accept-rollback (or
// --accept-broken-chain): the user goes on from an older or cut log on
// purpose, and its write signs the new head. done settles them once that
// write is over: removed when it was recorded, put back when it failed
// (a role without the owner's rights, a database gone), so that a
// rollback nothing recorded leaves this user's head of the ledger as it
// was; a head kept meanwhile is not replaced.
func (g *Globals) DropHeads() (done func(recorded bool), err error) {
	var aside []*trust.Dropped
	done = func(recorded bool) {
		for _, d := range aside {
			if err := d.Settle(recorded); err != nil {
				g.Log.Warn("could not settle the signed head kept of the ledger that was moved aside (the next look at it puts it back)", "err", err)
			}
		}
	}
	s, pins, err := g.RootPins()
	if err != nil {
		return done, err
	}
	for _, p := range pins {
		// What this user verified of the old log is no head of the new one.
		if err := VerifiedOf(s, p.Root).Forget(p.LedgerID); err != nil {
			return done, err
		}
		dropped, err := Heads(s, p.Root).DropAll(p.LedgerID)
		aside = append(aside, dropped...)
		if err != nil {
			return done, err
		}
		if len(dropped) > 0 {
			g.Log.Info("rollback accepted: dropped the signed head kept of the ledger", "ledger_id", p.LedgerID, "root", p.Root)
		}
	}
	return done, nil
}
