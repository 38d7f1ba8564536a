package invocation

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/lockfile"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/trust"
	"github.com/lockledger/lockledger/witness"
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

// Trusting: writers sign with the trust store's key (or the group's), pin
// the ledger and keep its head; verify checks against them. Not with an
// explicit --signing-key (today's behaviour) nor with --unsigned.
func (g *Globals) Trusting() bool {
	return g.Sign.Key == "" && !g.Sign.Unsigned
}

// defaultKey is the key a writer signs with when none was given: the
// group's shared key for a group root, else the trust store's, made on
// first use.
func (g *Globals) defaultKey() (*trust.Key, error) {
	if g.key != nil {
		return g.key, nil
	}
	if _, err := g.TrustStore(); err != nil {
		return nil, err
	}
	gid, group, err := g.groupRoot()
	if err != nil {
		return nil, err
	}
	var k *trust.Key
	var created bool
	if group {
		path := groupKeyPath(g.Root)
		if err = lockfile.MkdirReachable(filepath.Dir(path)); err == nil {
			k, created, err = trust.LoadOrCreateKey(path, trust.KeyName(), 0o640, gid, rootOwner(g.Root))
		}
		var st unix.Stat_t
		if err == nil && unix.Stat(filepath.Dir(path), &st) == nil && st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0 {
			g.Log.Warn("the group's signing key lies in a directory others can write: any of them can replace it; keep it in one only its owner writes (or sticky)",
				"file", path, "mode", fmt.Sprintf("%04o", st.Mode&0o7777))
		}
		if err != nil && !errors.Is(err, events.ErrInvalid) {
			return nil, fmt.Errorf("%w: the signing key of the group root %s cannot be read or created at %s (%s): "+
				"have the member who should own it run `lockledger keygen --name NAME -o %s` and `chgrp GROUP %s; chmod 0640 %s`, "+
				"or write without signing (--unsigned)", ledger.ErrUntrustedRoot, trust.Resolve(g.Root), path, ErrText(err), path, path, path)
		}
	} else {
		k, created, err = g.trust.Key()
	}
	if err != nil {
		return nil, err
	}
	if created {
		g.Log.Info("made a signing key for this user's checkpoints (kept outside every root)", "file", k.Path, "verifier_key", k.Verifier)
	}
	g.key = k
	return k, nil
}

// groupKeyPath is where a group root's shared signing key lives: beside
// the root, <dir of ROOT>/.<base of ROOT>.signing.key, mode 0640 with the
// root's group: the group's writers read it, only its owner writes it,
// and whoever can write ROOT cannot replace it.
func groupKeyPath(root string) string {
	r := trust.Resolve(root)
	return filepath.Join(filepath.Dir(r), "."+filepath.Base(r)+".signing.key")
}

// rootOwner is the uid owning the root, -1 when it cannot be read (a root
// not made yet).
func rootOwner(root string) int {
	var st unix.Stat_t
	if err := unix.Stat(trust.Resolve(root), &st); err != nil {
		return -1
	}
	return int(st.Uid)
}

// groupRoot reports whether the root is (or --group makes it) a group
// root, and its group.
func (g *Globals) groupRoot() (int, bool, error) {
	if g.Group != "" {
		gid, err := lookupGroup(g.Group)
		return gid, err == nil, err
	}
	var st unix.Stat_t
	if err := unix.Stat(trust.Resolve(g.Root), &st); err != nil {
		return 0, false, nil
	}
	return int(st.Gid), st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Mode&unix.S_ISGID != 0 && st.Mode&0o070 == 0o070, nil
}

// trustOptions are a writer's options with the trust store: its key, the
// heads witness.
func (g *Globals) trustOptions() ([]ledger.Option, *trust.Key, error) {
	k, err := g.defaultKey()
	if err != nil {
		return nil, nil, err
	}
	pins, err := g.trust.PinsOf(g.Root)
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", g.trust.PinsPath(), err)
	}
	var pinned []note.Verifier // the owner's key a fleet's host pinned vouches for its signer events
	for _, p := range pins {
		if v, err := checkpoint.NewVerifier(p.Verifier); err == nil {
			pinned = append(pinned, v)
		}
	}
	return []ledger.Option{ledger.WithSigner(k.Signer), ledger.WithHeads(g.trust.HeadsDir()), ledger.WithTrustedKeys(pinned...)}, k, nil
}

// PinError: the trust store pins another ledger at this root.
type PinError struct {
	Root, Pinned, Found, File string
}

func (e *PinError) Error() string {
	return fmt.Sprintf("refusing to write: %s holds ledger %s, but %s pins ledger %s there: the ledger was swapped or replaced; "+
		"if that was meant, `lockledger trust forget` then write again (or `lockledger trust pin --ledger-id %s --verifier-key KEY`)",
		e.Root, e.Found, e.File, e.Pinned, e.Found)
}

// ErrPinned: see PinError.
var ErrPinned = errors.New("another ledger is pinned at this root")

func (e *PinError) Is(target error) bool { return target == ErrPinned }

// pin checks the ledger l a writer opened against the trust store's pins
// of the root: another ledger pinned there refuses the write; none pins
// this one on first use (said on stderr).
func (g *Globals) pin(l *ledger.Ledger, k *trust.Key) error {
	pins, err := g.trust.PinsOf(g.Root)
	if err != nil {
		return fmt.Errorf("reading %s: %w", g.trust.PinsPath(), err)
	}
	same, have := false, false
	var other string
	for _, p := range pins {
		switch {
		case p.LedgerID != l.ID():
			other = p.LedgerID
		case p.Verifier == k.Verifier:
			same, have = true, true
		default:
			same = true
		}
	}
	if other != "" && !same {
		return &PinError{Root: trust.Resolve(g.Root), Pinned: other, Found: l.ID(), File: g.trust.PinsPath()}
	}
	if have {
		return nil
	}
	p := trust.Pin{Root: trust.Resolve(g.Root), LedgerID: l.ID(), Verifier: k.Verifier}
	if _, err := g.trust.Add(p); err != nil {
		return fmt.Errorf("pinning the ledger in %s: %w", g.trust.PinsPath(), err)
	}
	what := "trusting ledger %s at %s on first use: pinned in %s with key %s"
	if same {
		what = "ledger %s at %s: pinned another signing key in %s: %s"
	}
	g.Sayf(what, l.ID(), p.Root, g.trust.PinsPath(), k.Verifier)
	if !same {
		if elsewhere, err := g.trust.Pins(); err == nil {
			for _, o := range elsewhere {
				if o.LedgerID == l.ID() && o.Root != p.Root {
					g.Sayf("ledger %s is pinned at %s too: this root is a copy of it (or it of this one); each keeps its own signed head, and neither is checked against the other", l.ID(), o.Root)
					break
				}
			}
		}
	}
	return nil
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
func Heads(s *trust.Store, root string) witness.Heads {
	return witness.Heads{Dir: s.HeadsDir(), Root: trust.Resolve(root)}
}

// KeptHead is the file holding the head the trust store keeps of ledger
// id at root, "" when there is none.
func KeptHead(s *trust.Store, root, id string) string {
	p := Heads(s, root).Kept(id)
	if p == "" {
		return ""
	}
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) || err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	return p
}

// DropHeads removes the signed heads the trust store keeps of the ledgers
// pinned at the root, for project --accept-rollback (or
// --accept-broken-chain): the user goes on from an older or cut log on
// purpose, and the next write signs its head.
func (g *Globals) DropHeads() error {
	s, err := g.TrustStore()
	if err != nil {
		return err
	}
	pins, err := s.PinsOf(g.Root)
	if err != nil {
		return err
	}
	for _, p := range pins {
		heads := Heads(s, p.Root)
		for _, path := range []string{heads.Path(p.LedgerID), witness.Heads{Dir: heads.Dir}.Path(p.LedgerID)} {
			if err := os.Remove(path); err == nil {
				g.Log.Info("rollback accepted: dropped the signed head kept of the ledger", "ledger_id", p.LedgerID, "file", path)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}
