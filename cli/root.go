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
		Long: `lockledger is a lock manager in which every lock action (acquired, heartbeat,
stolen, released, heartbeat failed, blocked, refused) is appended as a
schema-validated, hash-chained event to ROOT/ledger.db, and so is every read
of the whole log (export, verify, project), with who ran it: the declared
actor and the OS user. Lock files in ROOT/locks follow the
tower-fleet v1 format, so existing tools keep reading them.

What lockledger refuses to touch (more in README.md):
  - a --file path that holds anything but nothing, the ledger's own file
    or a lock of that format (a config, a copy of /etc/passwd, a
    database): exit 2, the file left as it is;
  - a --file path inside the root (under any name: a symlink, a bind
    mount), except below a subdirectory of ROOT/locks;
  - a ledger.db of another application, or one missing or empty where the
    root shows it held a ledger (writer.flock records its id, ledger.db-wal
    holds commits, locks/ has files the ledger wrote): exit 1, nothing
    created, since a new ledger would restart fencing tokens at 1;
  - a --signing-key, keygen -o or writer's --witness inside the root: exit 2
    (whoever can rewrite the ledger could read or rewrite it);
  - a symlink, a directory or an unreadable file at a lock path, or a file
    at ROOT/locks: never followed or written; writes to that lock exit 1,
    the read commands carry on and report it.
--root itself may be a symlink: every command resolves it the same way.

ROOT is --root, else $LOCKLEDGER_ROOT, else $XDG_STATE_HOME/lockledger,
else ~/.local/state/lockledger: never the current directory. lockledger
init creates the ledger; a read where none was ever recorded says so
(exit 6) and never answers "free".

Exit codes: 0 ok, 1 failure, 2 invalid input, 3 held by an active holder,
4 stale (use --force), 5 not the holder / lock lost, 6 no ledger; 128+N
when signal N (INT 130, TERM 143, HUP 129) stopped the command, e.g.
during --wait.

Tamper evidence beyond the chain, on by default: writers sign with this
user's key from the trust store outside every root (lockledger trust),
pin the ledger on first use and keep its latest signed head there; plain
verify checks the ledger against them (--unsigned opts out). keygen makes
a key of its own (--signing-key); writers copy checkpoints to --witness
paths; verify --verifier-key checks the log against them, prove and
verify-proof give an auditor proofs. Those flags (--signing-key, --witness,
--witness-url, --unsigned, --checkpoint-*) show in the help of the
commands that write, e.g. lockledger acquire --help.`,
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
