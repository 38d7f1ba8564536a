package cli

import (
	"cmp"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/cli/auditcmd"
	"github.com/lockledger/lockledger/cli/fencecmd"
	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/cli/lockcmd"
	"github.com/lockledger/lockledger/cli/timelinecmd"
)

// commands are every command below the root but help (registerHelpTopics)
// and what cobra adds as it runs (completion, __complete).
var commands = slices.Concat(lockcmd.Commands, timelinecmd.Commands, auditcmd.Commands,
	[]invocation.Command{{Listing: versionListing, New: newVersion}}, fencecmd.Commands)

// newRoot is the whole command tree.
func newRoot(g *invocation.Globals) *cobra.Command {
	root := newBareRoot(g)
	for _, c := range commands {
		root.AddCommand(c.New(g))
	}
	return finishRoot(root, g)
}

// newRootFor is the tree that running args needs: the command args name
// built in full, every other only as its stub (invocation.Listing.Stub),
// which is all the root's help listing, version and dispatch read. Args
// that name no command here get the whole tree: a typo (its "Did you mean"
// suggestions), help (help COMMAND and help TOPIC read the command's own
// help) and completion and __complete, which cobra adds as it runs and
// which read every command's flags.
func newRootFor(g *invocation.Globals, args []string) *cobra.Command {
	root := newBareRoot(g)
	stubs := make([]*cobra.Command, len(commands))
	for i, c := range commands {
		stubs[i] = c.Stub()
		root.AddCommand(stubs[i])
	}
	root.InitDefaultHelpFlag()
	root.InitDefaultVersionFlag()
	cmd, _, err := root.Find(args)
	for i, c := range commands {
		if err != nil || cmd == stubs[i] {
			root.RemoveCommand(stubs[i])
			root.AddCommand(c.New(g))
		}
	}
	return finishRoot(root, g)
}

// newBareRoot is the root command with its flags and no command below it.
func newBareRoot(g *invocation.Globals) *cobra.Command {
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
			if err := g.Setup(!cmd.Flags().Changed("log-level")); err != nil {
				return err
			}
			if cmd.Flags().Changed("jq") {
				if err := g.StartJQ(g.JQExpr); err != nil {
					return err
				}
			}
			if err := checkJSONFlag(cmd, g.JSON); err != nil {
				return err
			}
			return g.ResolveRoot(cmd.Name(), cmd.Flags().Changed("root"))
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &invocation.UsageError{Err: err} })
	pf := root.PersistentFlags()
	pf.StringVar(&g.Root, "root", os.Getenv(invocation.EnvRoot), "directory holding ledger.db and locks/, symlinks resolved (default "+invocation.RootHelp+")")
	pf.StringVar(&g.Database, "database", os.Getenv("LOCKLEDGER_DATABASE_URL"),
		"keep the ledger in this PostgreSQL database (postgres://...; PG* variables honoured) instead of ROOT/ledger.db,\none ledger for many hosts; ROOT keeps this host's lock files (env LOCKLEDGER_DATABASE_URL)")
	pf.StringVar(&g.Group, "group", os.Getenv("LOCKLEDGER_GROUP"),
		"create the root as a group root of this group (name or id): directories 2770 setgid, files 0660; the root's mode keeps it\na group root for every later command (env LOCKLEDGER_GROUP)")
	pf.BoolVar(&g.JSON, "json", false, "print one JSON document on stdout, errors included (lockledger help json)")
	pf.StringVar(&g.JQExpr, "jq", "", "implies --json; print the results of this jq expression on the JSON instead (strings raw), e.g. --jq .request_id")
	pf.StringVar(&g.LogLevel, "log-level", cmp.Or(os.Getenv(invocation.EnvLogLevel), "info"), "log level: debug, info, warn, error (env "+invocation.EnvLogLevel+")")
	pf.BoolVarP(&g.Quiet, "quiet", "q", false, "only errors on stderr (same as --log-level error; no progress line while waiting)")
	pf.StringVar(&g.LogFormat, "log-format", "text", "log format on stderr: text or json")
	g.Sign.Register(root)
	return root
}

// finishRoot sets up what spans the commands below root: completion of
// their arguments and flags, the help command and topics, and the global
// flags each command's help leaves out.
func finishRoot(root *cobra.Command, g *invocation.Globals) *cobra.Command {
	registerCompletions(root, g)
	registerHelpTopics(root)
	hideUnusedFlagsInHelp(root)
	return root
}
