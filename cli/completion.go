package cli

// Shell completion (lockledger completion bash|zsh|fish|powershell, from
// cobra): lock names, event types, --format values and the FORMAT: of
// --file FORMAT:PATH. Lock names are the locks the ledger at --root lists
// (held, stale or free with a file) and the lock files in ROOT/locks; for
// the commands that read the past (pastCommands), every lock the log has
// an event of. All read only:
// completing never creates a root or a ledger, and a root without one
// completes the lock files it has, if any.

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/cli/eventfmt"
	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/formats"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/store"
	"github.com/lockledger/lockledger/trust"
)

// formatValues are the --format values of each command that has one.
var formatValues = map[string][]string{
	"export":   {eventfmt.FormatJSONL, "csv"},
	"history":  {eventfmt.FormatTable, "json", eventfmt.FormatJSONL, "csv"},
	"metrics":  {"text", "openmetrics"},
	"timeline": {eventfmt.FormatTable, "json", eventfmt.FormatJSONL, "csv", "html", "svg"},
	"status":   {"text", "bso"},
}

// lockNameCommands take one lock name as their argument.
var lockNameCommands = []string{"acquire", "heartbeat", "release", "status", "steal", "run", "history", "who"}

// pastCommands read the log: they complete every lock that ever existed,
// not only those the ledger lists now.
var pastCommands = []string{"history", "who", "timeline", "replay", "export"}

// completionLimit bounds how many lock names one completion reads.
const completionLimit = 1000

// completionBudget bounds the ledger read behind a completion: a shell
// waiting on Tab is worse than a list without the ledger's names.
const completionBudget = 2 * time.Second

func registerCompletions(root *cobra.Command, g *invocation.Globals) {
	bashWithoutPackage(root)
	locks := func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return lockNames(cmd.Context(), g, toComplete, slices.Contains(pastCommands, cmd.Name())), cobra.ShellCompDirectiveNoFileComp
	}
	for _, c := range allCommands(root) {
		if slices.Contains(lockNameCommands, c.Name()) && c.HasParent() && c.Parent() == root {
			c.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
				if len(args) > 0 {
					if cmd.Name() == "run" {
						return nil, cobra.ShellCompDirectiveDefault // the command to run
					}
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
				return locks(cmd, args, toComplete)
			}
		}
		if c.Flags().Lookup("lock") != nil {
			_ = c.RegisterFlagCompletionFunc("lock", locks)
		}
		if c.Flags().Lookup("type") != nil {
			_ = c.RegisterFlagCompletionFunc("type", completeTypes)
		}
		if vals, ok := formatValues[c.Name()]; ok && c.Flags().Lookup("format") != nil {
			_ = c.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(vals, cobra.ShellCompDirectiveNoFileComp))
		}
		if f := c.Flags().Lookup("file"); f != nil {
			switch c.Name() {
			case "verify":
				// A JSON Lines export: any file.
			case "status":
				_ = c.RegisterFlagCompletionFunc("file", completeTargets([]string{formats.BSO.Name()}))
			default:
				_ = c.RegisterFlagCompletionFunc("file", completeTargets(formats.Names()))
			}
		}
	}
}

// completeTypes completes one event type, or the next of a comma-separated
// list.
func completeTypes(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	done := toComplete[:strings.LastIndexByte(toComplete, ',')+1]
	var out []string
	for _, t := range events.Types {
		out = append(out, done+string(t))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeTargets completes FORMAT: first, then the path after it.
func completeTargets(names []string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if format, _, ok := strings.Cut(toComplete, ":"); ok && slices.Contains(names, format) {
			// The shell completes PATH; zsh and fish do so after the prefix.
			return nil, cobra.ShellCompDirectiveDefault
		}
		out := make([]string, len(names))
		for i, n := range names {
			out[i] = n + ":"
		}
		return out, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
	}
}

// lockNames are the locks the ledger at --root knows (with ever, every
// lock its log has an event of) and the lock files in its locks directory,
// those starting with prefix, sorted.
func lockNames(ctx context.Context, g *invocation.Globals, prefix string, ever bool) []string {
	if ctx == nil {
		ctx = context.Background()
	}
	seen := map[string]bool{}
	if g.ResolveRoot("", false) != nil {
		return nil
	}
	root := trust.Resolve(g.Root)
	if entries, err := os.ReadDir(filepath.Join(root, ledger.LocksDir)); err == nil {
		for _, e := range entries {
			if name, ok := strings.CutSuffix(e.Name(), ".lock"); ok && !strings.HasPrefix(name, ".") && events.ValidateLockName(name) == nil {
				seen[name] = true
			}
		}
	}
	if g.Database != "" || hasLedgerFile(root) {
		ctx, cancel := context.WithTimeout(ctx, completionBudget)
		defer cancel()
		if l, err := g.OpenExisting(ctx, ledger.WithBusyTimeout(completionBudget)); err == nil {
			if ever {
				for _, n := range pastLockNames(ctx, l, prefix) {
					seen[n] = true
				}
			} else if all, err := l.List(ctx); err == nil {
				for _, s := range all {
					seen[s.Name] = true
				}
			}
			_ = l.Close()
		}
	}
	var out []string
	for n := range seen {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// pastLockNames are the locks l's log has an event of, starting with
// prefix (at most completionLimit).
func pastLockNames(ctx context.Context, l *ledger.Ledger, prefix string) []string {
	tx, err := l.BeginRead(ctx)
	if err != nil {
		return nil
	}
	defer tx.Rollback()
	names, _ := store.LockNames(ctx, tx, prefix, completionLimit)
	return slices.DeleteFunc(names, func(n string) bool { return events.ValidateLockName(n) != nil })
}

// hasLedgerFile reports whether root holds a non-empty ledger.db: only then
// is there a ledger to read (and opening nothing creates nothing).
func hasLedgerFile(root string) bool {
	fi, err := os.Lstat(filepath.Join(root, ledger.DBFile))
	return err == nil && fi.Mode().IsRegular() && fi.Size() > 0
}

// cobraBashInit is the body of the words splitting of cobra's bash script,
// which only the bash-completion package defines.
const cobraBashInit = `    COMPREPLY=()
    _get_comp_words_by_ref "$@" cur prev words cword
}`

// bashInitFallback splits the words as bash did when bash-completion is
// not installed (a fresh machine, a container), so that lock names still
// complete there: without it the script fails on every TAB.
const bashInitFallback = `    COMPREPLY=()
    if declare -F _get_comp_words_by_ref >/dev/null 2>&1; then
        _get_comp_words_by_ref "$@" cur prev words cword
        return
    fi
    # No bash-completion package: the words as bash split them.
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
    cur=${COMP_WORDS[COMP_CWORD]-}
    prev=${COMP_WORDS[COMP_CWORD-1]-}
}`

// bashWithoutPackage makes `completion bash` write cobra's script with a
// fallback for a shell that lacks the bash-completion package.
func bashWithoutPackage(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	sh, _, err := root.Find([]string{"completion", "bash"})
	if err != nil || sh.Name() != "bash" {
		return
	}
	sh.Long = strings.Replace(sh.Long, "This script depends on the 'bash-completion' package.",
		"With the 'bash-completion' package the script completes as bash-completion does; without it, on the words as bash splits them.", 1)
	sh.Run = nil
	sh.RunE = func(cmd *cobra.Command, _ []string) error {
		noDesc, _ := cmd.Flags().GetBool("no-descriptions")
		var b strings.Builder
		if err := cmd.Root().GenBashCompletionV2(&b, !noDesc); err != nil {
			return err
		}
		script := b.String()
		if !strings.Contains(script, cobraBashInit) {
			return errors.New("cobra's bash completion script has changed: its fallback for a shell without bash-completion no longer applies")
		}
		_, err := io.WriteString(cmd.OutOrStdout(), strings.Replace(script, cobraBashInit, bashInitFallback, 1))
		return err
	}
}
