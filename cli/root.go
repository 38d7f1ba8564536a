package cli

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/cli/auditcmd"
	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/cli/lockcmd"
	"github.com/lockledger/lockledger/cli/timelinecmd"
)

func newRoot(g *invocation.Globals) *cobra.Command {
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
	envLevel := os.Getenv(invocation.EnvLogLevel)
	if envLevel == "" {
		envLevel = "info"
	}
	pf.StringVar(&g.LogLevel, "log-level", envLevel, "log level: debug, info, warn, error (env "+invocation.EnvLogLevel+")")
	pf.BoolVarP(&g.Quiet, "quiet", "q", false, "only errors on stderr (same as --log-level error; no progress line while waiting)")
	pf.StringVar(&g.LogFormat, "log-format", "text", "log format on stderr: text or json")
	g.Sign.Register(root)
	root.AddCommand(lockcmd.NewAcquire(g), lockcmd.NewHeartbeat(g), lockcmd.NewRelease(g), lockcmd.NewStatus(g), lockcmd.NewList(g), lockcmd.NewSteal(g), lockcmd.NewRun(g))
	root.AddCommand(auditCommands(g)...)
	root.AddCommand(auditcmd.NewKeygen(g), auditcmd.NewCheckpoint(g), auditcmd.NewProve(g), auditcmd.NewVerifyProof(g), auditcmd.NewImport(g), auditcmd.NewTrust(g))
	root.AddCommand(auditcmd.NewArchive(g), auditcmd.NewPrune(g), auditcmd.NewUnprune(g))
	root.AddCommand(lockcmd.NewInit(g), newVersion(g))
	root.AddCommand(lockcmd.NewWatchHolder(g), lockcmd.NewRecordLoss(g))
	root.AddCommand(auditcmd.NewMetrics(g))
	registerCompletions(root, g)
	registerHelpTopics(root)
	hideUnusedFlagsInHelp(root)
	return root
}

// auditCommands are the read side of the ledger: history, timeline, who,
// replay, verify, export and project.
func auditCommands(g *invocation.Globals) []*cobra.Command {
	return []*cobra.Command{timelinecmd.NewHistory(g), timelinecmd.NewTimeline(g), timelinecmd.NewWho(g), timelinecmd.NewReplay(g), auditcmd.NewVerify(g), auditcmd.NewExport(g), auditcmd.NewProject(g)}
}
