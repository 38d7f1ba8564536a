package cli

import (
	"context"
	"errors"
	"fmt"
	"os/user"
	"strconv"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/trust"
)

// access is what a command does with the ledger at --root.
type access int

const (
	// writes may create the ledger.
	writes access = iota
	// rewrites changes an existing ledger only (project).
	rewrites
	// reads changes nothing in the root (but upgrades a ledger written by
	// an older lockledger where it can), so it also reads a read-only copy.
	reads
)

func (g *globals) open(ctx context.Context, a access, more ...ledger.Option) (*ledger.Ledger, error) {
	opts := append([]ledger.Option{ledger.WithLogger(g.log)}, more...)
	if g.database != "" {
		opts = append(opts, ledger.WithDatabase(g.database), ledger.WithPoolSize(2))
	}
	var key *trust.Key
	if a != reads {
		sign, k, err := g.signingOptions()
		if err != nil {
			return nil, err
		}
		key = k
		opts = append(opts, sign...)
		if g.group != "" {
			gid, err := lookupGroup(g.group)
			if err != nil {
				return nil, err
			}
			opts = append(opts, ledger.WithGroup(gid))
		}
	}
	switch a {
	case rewrites:
		opts = append(opts, ledger.MustExist())
	case reads:
		l, err := ledger.Open(ctx, g.root, append(opts, ledger.ReadOnly())...)
		if !errors.Is(err, ledger.ErrOldSchema) {
			return l, err
		}
		// A ledger written by an older lockledger: upgrade it, as any
		// writing command would, where the root allows it.
		g.log.Info("upgrading the ledger's schema before reading it", "root", g.root)
		l, uerr := ledger.Open(ctx, g.root, append(opts, ledger.MustExist())...)
		if uerr != nil {
			return nil, fmt.Errorf("%w (upgrading it failed: %w)", err, uerr)
		}
		return l, nil
	}
	l, err := ledger.Open(ctx, g.root, opts...)
	if err == nil && key != nil {
		if err = g.pin(l, key); err != nil {
			g.finish(l)
			return nil, err
		}
	}
	return l, err
}

// openWaiting opens the ledger for a command that was told to wait up to
// wait for its lock: a database too busy to open (many processes opening a
// fresh root at once) is waited for too, within the same budget, which it
// returns what is left of.
func (g *globals) openWaiting(ctx context.Context, wait time.Duration) (*ledger.Ledger, time.Duration, error) {
	start := time.Now()
	l, err := g.open(ctx, writes, ledger.WithOpenWait(wait))
	return l, max(wait-time.Since(start), 0), err
}

// finish lets go of a ledger at the end of a command. The CLI process exits
// right after, so it detaches rather than closing (see ledger.Detach).
func (g *globals) finish(l *ledger.Ledger) {
	if err := l.Detach(); err != nil {
		g.log.Debug("detach", "err", err)
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

// openExisting opens the ledger read-only, without upgrading it.
func (g *globals) openExisting(ctx context.Context) (*ledger.Ledger, error) {
	opts := []ledger.Option{ledger.WithLogger(g.log), ledger.ReadOnly()}
	if g.database != "" {
		opts = append(opts, ledger.WithDatabase(g.database), ledger.WithPoolSize(1))
	}
	return ledger.Open(ctx, g.root, opts...)
}
