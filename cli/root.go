package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/trust"
)

func newRoot(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "lockledger",
		Short: "Locks for scripts, CI jobs and services, with every action kept as an audit event",
		Long: `lockledger takes and releases locks for scripts, CI jobs and services, and
appends every lock action (acquired, heartbeat, stolen, released, heartbeat
failed, blocked, refused) as a schema-validated, hash-chained, signed event
to a ledger: ROOT/ledger.db, or one PostgreSQL database for many hosts
(--database). Every read of the whole log (export, verify, project) is
recorded too, with who ran it: the declared actor and the OS user.

Start with:
  lockledger run NAME -- CMD...      hold NAME while CMD runs (-w 10m waits)
  lockledger acquire / release NAME  hold a lock across a script's steps
  lockledger status NAME, list, who  look, taking nothing
  lockledger timeline --lock NAME    what happened (--format html: a page)
  lockledger verify                  check that the record is unchanged

ROOT is --root, else $LOCKLEDGER_ROOT, else $XDG_STATE_HOME/lockledger,
else ~/.local/state/lockledger: never the current directory. Exit codes: 0
ok, 1 failure, 2 invalid input, 3 held, 4 stale (use --force), 5 not the
holder or lock lost, 6 no ledger (lockledger help exit-codes, help
environment).

Signing and witness flags (--signing-key, --witness, --witness-url,
--unsigned, --checkpoint-*) show in the help of the commands that write,
e.g. lockledger acquire --help. What lockledger refuses to touch (other
files at --file paths, anything inside the root, a key or witness there),
tamper evidence and every rule: docs/ in github.com/lockledger/lockledger,
listed in its README.md.`,
		Version:       currentBuild().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := g.setup(!cmd.Flags().Changed("log-level")); err != nil {
				return err
			}
			if cmd.Flags().Changed("jq") {
				if err := g.startJQ(g.jqExpr); err != nil {
					return err
				}
			}
			if err := checkJSONFlag(cmd, g.json); err != nil {
				return err
			}
			return g.resolveRoot(cmd.Name(), cmd.Flags().Changed("root"))
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	pf := root.PersistentFlags()
	pf.StringVar(&g.root, "root", os.Getenv(envRoot), "directory holding ledger.db and locks/, symlinks resolved (default "+rootHelp+")")
	pf.StringVar(&g.database, "database", os.Getenv("LOCKLEDGER_DATABASE_URL"),
		"keep the ledger in this PostgreSQL database (postgres://...; PG* variables honoured) instead of ROOT/ledger.db,\none ledger for many hosts; ROOT keeps this host's lock files (env LOCKLEDGER_DATABASE_URL)")
	pf.StringVar(&g.group, "group", os.Getenv("LOCKLEDGER_GROUP"),
		"create the root as a group root of this group (name or id): directories 2770 setgid, files 0660; the root's mode keeps it\na group root for every later command (env LOCKLEDGER_GROUP)")
	pf.BoolVar(&g.json, "json", false, "print one JSON document on stdout, errors included (lockledger help json)")
	pf.StringVar(&g.jqExpr, "jq", "", "implies --json; print the results of this jq expression on the JSON instead (strings raw), e.g. --jq .request_id")
	envLevel := os.Getenv(envLogLevel)
	if envLevel == "" {
		envLevel = "info"
	}
	pf.StringVar(&g.logLevel, "log-level", envLevel, "log level: debug, info, warn, error (env "+envLogLevel+")")
	pf.BoolVarP(&g.quiet, "quiet", "q", false, "only errors on stderr (same as --log-level error; no progress line while waiting)")
	pf.StringVar(&g.logFormat, "log-format", "text", "log format on stderr: text or json")
	g.sign.register(root)
	root.AddCommand(newAcquire(g), newHeartbeat(g), newRelease(g), newStatus(g), newList(g), newSteal(g), newRun(g))
	root.AddCommand(auditCommands(g)...)
	root.AddCommand(newKeygen(g), newCheckpoint(g), newProve(g), newVerifyProof(g), newImport(g), newTrust(g))
	root.AddCommand(newArchive(g), newPrune(g), newUnprune(g))
	root.AddCommand(newInit(g), newVersion(g))
	root.AddCommand(newWatchHolder(g), newRecordLoss(g))
	root.AddCommand(newMetrics(g))
	registerCompletions(root, g)
	registerHelpTopics(root)
	hideUnusedFlagsInHelp(root)
	return root
}

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

func lockArg(args []string) (string, error) {
	if len(args) != 1 {
		return "", events.Invalid("lock name", strings.Join(args, " "), "exactly one lock name is required")
	}
	return args[0], events.ValidateLockName(args[0])
}

func exactlyOneLock(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return &usageError{fmt.Errorf("%s: takes exactly one lock name, got %d arguments", cmd.Name(), len(args))}
	}
	return nil
}
