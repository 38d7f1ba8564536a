package invocation

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/lockfile"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/trust"
)

// Access is what a command does with the ledger at --root.
type Access int

const (
	// Writes may create the ledger.
	Writes Access = iota
	// Rewrites changes an existing ledger only (project).
	Rewrites
	// Reads changes nothing in the root (but upgrades a ledger written by
	// an older lockledger where it can), so it also reads a read-only copy.
	Reads
)

// Open opens the ledger at --root (or --database) for what a does with
// it: a writer with its signing options and --group, checked against the
// trust store's pin when it signs (ledger.Open does); a reader read-only,
// upgrading a ledger written by an older lockledger where the root allows
// it.
func (g *Globals) Open(ctx context.Context, a Access, more ...ledger.Option) (*ledger.Ledger, error) {
	busy, err := BusyTimeout()
	if err != nil {
		return nil, err
	}
	opts := append(append([]ledger.Option{ledger.WithLogger(g.Log)}, busy...), more...)
	if g.Database != "" {
		opts = append(opts, ledger.WithDatabase(g.Database), ledger.WithPoolSize(2))
	}
	if a != Reads {
		sign, err := g.signingOptions()
		if err != nil {
			return nil, err
		}
		opts = append(opts, sign...)
		group, err := g.GroupOption()
		if err != nil {
			return nil, err
		}
		opts = append(opts, group...)
	}
	switch a {
	case Rewrites:
		opts = append(opts, ledger.MustExist())
	case Reads:
		l, err := ledger.Open(ctx, g.Root, append(opts, ledger.ReadOnly())...)
		if !errors.Is(err, ledger.ErrOldSchema) {
			return l, err
		}
		// A ledger written by an older lockledger: upgrade it, as any
		// writing command would, where the root allows it; a reader makes
		// no key and pins nothing.
		g.Log.Info("upgrading the ledger's schema before reading it", "root", g.Root)
		l, uerr := ledger.Open(ctx, g.Root, append(opts, ledger.MustExist(), ledger.Unsigned())...)
		if uerr != nil {
			return nil, fmt.Errorf("%w (upgrading it failed: %w)", err, uerr)
		}
		return l, nil
	}
	return ledger.Open(ctx, g.Root, opts...)
}

// Using runs fn on the ledger opened for a (Open, with more), and lets
// go of it after (Finish).
func (g *Globals) Using(ctx context.Context, a Access, fn func(*ledger.Ledger) error, more ...ledger.Option) error {
	l, err := g.Open(ctx, a, more...)
	if err != nil {
		return err
	}
	defer g.Finish(l)
	return fn(l)
}

// OpenKeyed opens an existing ledger for a write only the ledger's own
// signing key may make (prune, unprune: verify takes their markers only
// with its signature). A writer with no key (--unsigned alone) is refused,
// and so is a key the trust store did not pin for this ledger at this root
// before this command (ledger.MustBePinned: a first use pins nothing
// here). Both are bad input (events.Invalid, exit 2) and change nothing.
func (g *Globals) OpenKeyed(ctx context.Context, what string) (*ledger.Ledger, error) {
	if g.Sign.Key == "" && g.Sign.Unsigned {
		return nil, events.Invalid("--unsigned", "", fmt.Sprintf(
			"%s needs the ledger's signing key: without it verify cannot tell the %s from one made by whoever can write the database; "+
				"run it without --unsigned (the trust store's key), or give the key with --signing-key", what, what))
	}
	l, err := g.Open(ctx, Rewrites, ledger.MustBePinned())
	var np *trust.NotPinnedError
	if errors.As(err, &np) {
		return nil, events.Invalid("signing key", np.Verifier, fmt.Sprintf(
			"is not pinned for ledger %s at %s in %s: %s needs the ledger's signing key, the one its writes were signed and pinned with; "+
				"give it with --signing-key, or pin this key first (`lockledger trust pin --ledger-id %s --verifier-key KEY`)",
			np.LedgerID, np.Root, np.File, what, np.LedgerID))
	}
	return l, err
}

// OpenWaiting opens the ledger for a command that was told to wait up to
// wait for its lock: a database too busy to open (many processes opening a
// fresh root at once) is waited for too, within the same budget, which it
// returns what is left of. A wait the open used up leaves a nanosecond, not
// nothing: the caller still waits, so its one attempt is the last one of a
// wait, bounded by lease.GiveUpFor, where that of a caller that does not
// wait is given the whole busy timeout.
func (g *Globals) OpenWaiting(ctx context.Context, wait time.Duration) (*ledger.Ledger, time.Duration, error) {
	start := time.Now()
	l, err := g.Open(ctx, Writes, ledger.WithOpenWait(wait))
	left := wait - time.Since(start)
	if wait > 0 {
		left = max(left, time.Nanosecond)
	}
	return l, max(left, 0), err
}

// EnvBusyTimeout sets the busy timeout of every command that opens the
// ledger (ledger.WithBusyTimeout; default ledger.DefaultBusyTimeout). A
// command that bounds its own wait (a verify's record, completion) keeps
// its bound.
const EnvBusyTimeout = "LOCKLEDGER_BUSY_TIMEOUT"

// BusyTimeout is the option EnvBusyTimeout asks for, for every ledger a
// command opens (Open, OpenExisting, and one it opens itself, as import
// its source): none when it is unset or empty.
func BusyTimeout() ([]ledger.Option, error) {
	s := os.Getenv(EnvBusyTimeout)
	if s == "" {
		return nil, nil
	}
	d, err := ParseDuration(EnvBusyTimeout, s)
	if err != nil {
		return nil, err
	}
	// Twice the timeout bounds a commit's read-back, and PostgreSQL takes
	// it in milliseconds (lock_timeout): a day keeps both far from
	// overflowing.
	if d < time.Millisecond || d > 24*time.Hour {
		return nil, events.Invalid(EnvBusyTimeout, s, "must be from 1ms to 24h")
	}
	return []ledger.Option{ledger.WithBusyTimeout(d)}, nil
}

// Finish lets go of a ledger at the end of a command. The CLI process exits
// right after, so it detaches rather than closing (see ledger.Detach).
func (g *Globals) Finish(l *ledger.Ledger) {
	if err := l.Detach(); err != nil {
		g.Log.Debug("detach", "err", err)
	}
}

// lookupGroup is the id of group name: a name, or a number, which needs
// no entry in the group database (containers often have none).
func lookupGroup(name string) (int, error) {
	if gid, err := strconv.Atoi(name); err == nil && gid >= 0 {
		return gid, nil
	}
	grp, err := user.LookupGroup(name)
	if err != nil {
		return 0, events.Invalid("--group", name, "must name an existing group, or be a group id")
	}
	gid, err := strconv.Atoi(grp.Gid)
	if err != nil {
		return 0, events.Invalid("--group", name, "has no numeric group id")
	}
	return gid, nil
}

// GroupOption is --group as the option of a ledger.Open, none without it:
// a writer makes a new root a group root of it, and any open refuses an
// existing root that is not one of that group.
func (g *Globals) GroupOption() ([]ledger.Option, error) {
	if g.Group == "" {
		return nil, nil
	}
	gid, err := lookupGroup(g.Group)
	if err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 && !lockfile.Member(gid) {
		// The kernel would refuse the root's chgrp and the group key's
		// (EPERM), and no writer outside the group may use its root.
		return nil, events.Invalid("--group", g.Group, fmt.Sprintf(
			"this user (uid %d) is not a member of group %s: only its members (and root) make or write a root of it; ask for membership (usermod -aG), then log in again", os.Geteuid(), lockfile.GroupText(gid)))
	}
	return []ledger.Option{ledger.WithGroup(gid)}, nil
}

// OpenExisting opens the ledger read-only, without upgrading it.
func (g *Globals) OpenExisting(ctx context.Context, more ...ledger.Option) (*ledger.Ledger, error) {
	busy, err := BusyTimeout()
	if err != nil {
		return nil, err
	}
	opts := append(append([]ledger.Option{ledger.WithLogger(g.Log), ledger.ReadOnly()}, busy...), more...)
	if g.Database != "" {
		opts = append(opts, ledger.WithDatabase(g.Database), ledger.WithPoolSize(1))
	}
	return ledger.Open(ctx, g.Root, opts...)
}
