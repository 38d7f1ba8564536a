package cli

import (
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/cli/lockcmd"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/trust"
)

// EnvScope says which commands an environment variable matters to.
type EnvScope int

const (
	// EveryCommand: read by every command.
	EveryCommand EnvScope = iota
	// LedgerCommands: read by every command that opens a ledger.
	LedgerCommands
	// FlagCommands: the default of a flag (EnvVar.Flag), read by the
	// commands that open a ledger and have that flag.
	FlagCommands
	// NamedCommands: only EnvVar.Commands.
	NamedCommands
)

// EnvVar is one environment variable lockledger reads (or, with Set,
// gives the command it runs).
type EnvVar struct {
	Name     string
	Meaning  string
	Scope    EnvScope
	Flag     string   // FlagCommands: the flag it is the default of
	Commands []string // NamedCommands: the commands (with another scope: the commands besides it)
	// Driver: read by the PostgreSQL driver (pgx), not by lockledger's
	// own code; Name is then a pattern such as PG*.
	Driver bool
	// Set: lockledger sets it for the command run runs; only fence write
	// (named in Commands) reads it, as its flags' default.
	Set bool
}

// Environment is every environment variable lockledger reads or sets: the
// one table behind `lockledger help environment` and the man pages'
// ENVIRONMENT. A test fails when the code reads a variable not here.
var Environment = []EnvVar{
	{Name: invocation.EnvRoot, Scope: FlagCommands, Flag: "root",
		Meaning: "the root (the directory of ledger.db and locks/) when --root is not given"},
	{Name: "XDG_STATE_HOME", Scope: FlagCommands, Flag: "root",
		Meaning: "with neither --root nor " + invocation.EnvRoot + ", the root is $XDG_STATE_HOME/lockledger (an absolute path; a relative one is ignored)"},
	{Name: "HOME", Scope: FlagCommands, Flag: "root",
		Meaning: "with neither --root, " + invocation.EnvRoot + " nor XDG_STATE_HOME, the root is ~/.local/state/lockledger " +
			"(HOME unset or relative: the passwd entry's home directory), never the current directory; " +
			"with neither " + trust.EnvDir + " nor XDG_CONFIG_HOME, the trust store is ~/.config/lockledger"},
	{Name: "LOCKLEDGER_DATABASE_URL", Scope: FlagCommands, Flag: "database",
		Meaning: "the PostgreSQL database (postgres://...) holding the ledger when --database is not given"},
	{Name: "PG*", Scope: FlagCommands, Flag: "database", Driver: true,
		Meaning: "PGHOST, PGPORT, PGUSER, PGPASSWORD, PGPASSFILE, PGDATABASE, PGSSLMODE and the other libpq variables " +
			"fill in what a --database URL leaves out (read by the PostgreSQL driver)"},
	{Name: "LOCKLEDGER_GROUP", Scope: FlagCommands, Flag: "group",
		Meaning: "the group a new root is created for (a group root) when --group is not given"},
	{Name: "LOCKLEDGER_ACTOR", Scope: LedgerCommands,
		Meaning: "who acts, recorded in every event a command writes (default: $USER)"},
	{Name: "USER", Scope: LedgerCommands, Commands: []string{"keygen"},
		Meaning: "the actor when LOCKLEDGER_ACTOR is unset (neither set: the OS user's name, else the uid); " +
			"the user in a new key's default name (user@host/MACHINE, MACHINE this machine's key)"},
	{Name: ledger.HostIDEnv, Scope: LedgerCommands,
		Meaning: "this host's id, recorded in lock files and events and used to tell whether a holder's process is on this machine " +
			"(default: the hostname); set it where containers share a hostname or one host has many names"},
	{Name: invocation.EnvBusyTimeout, Scope: LedgerCommands,
		Meaning: "how long a command waits for a busy ledger (another writer, a database too busy to answer) before it fails: " +
			"a duration such as 30s or plain seconds, up to 24h (default 10s); a lost commit's outcome is read back for up to twice that"},
	{Name: invocation.EnvLogLevel, Scope: EveryCommand,
		Meaning: "the default of --log-level: debug, info, warn or error (default info)"},
	{Name: "NO_COLOR", Scope: EveryCommand,
		Meaning: "set (to anything): no colour in the log on stderr, even on a terminal"},
	{Name: trust.EnvDir, Scope: LedgerCommands,
		Meaning: "the trust store, outside every root: this user's signing key, the ledgers trusted at each root and their " +
			"latest signed heads (default: $XDG_CONFIG_HOME/lockledger, else ~/.config/lockledger)"},
	{Name: "XDG_CONFIG_HOME", Scope: LedgerCommands,
		Meaning: "with " + trust.EnvDir + " unset, the trust store is $XDG_CONFIG_HOME/lockledger (an absolute path; a relative one is ignored)"},
	{Name: invocation.EnvUnsigned, Scope: FlagCommands, Flag: "unsigned",
		Meaning: "1: the default of --unsigned, writing without the trust store (unsigned, the ledger not pinned, no head kept)"},
	{Name: "LOCKLEDGER_SIGNING_KEY", Scope: FlagCommands, Flag: "signing-key",
		Meaning: "the Ed25519 key writers sign checkpoints with, when --signing-key is not given: a file, or the key itself"},
	{Name: "LOCKLEDGER_WITNESS", Scope: FlagCommands, Flag: "witness",
		Meaning: "the --witness paths, a list separated like PATH"},
	{Name: "LOCKLEDGER_WITNESS_URL", Scope: FlagCommands, Flag: "witness-url",
		Meaning: "the --witness-url URL=VKEY pairs, separated by spaces"},
	{Name: "LOCKLEDGER_CHECKPOINT_EVERY", Scope: FlagCommands, Flag: "checkpoint-every",
		Meaning: "the default of --checkpoint-every: with a key, sign a checkpoint every this many events"},
	{Name: "LOCKLEDGER_CHECKPOINT_INTERVAL", Scope: FlagCommands, Flag: "checkpoint-interval",
		Meaning: "the default of --checkpoint-interval: with a key, the first write after this long without a checkpoint signs one"},
	{Name: lockcmd.EnvReleaseSecret, Scope: NamedCommands, Commands: []string{"release"},
		Meaning: "the release secret acquire gave the holding's acquirer (--print-release-secret, --release-secret-file), " +
			"presented by release --request-id when neither --secret nor --secret-file is given (not with --force): " +
			"accepted from any uid"},
	{Name: "LOCKLEDGER_LOCK", Scope: NamedCommands, Commands: []string{"run", "write"}, Set: true,
		Meaning: "set by run for its command: the lock it holds (fence write's default --lock)"},
	{Name: "LOCKLEDGER_REQUEST_ID", Scope: NamedCommands, Commands: []string{"run", "write"}, Set: true,
		Meaning: "set by run for its command: the request id of the holding (for release or heartbeat --request-id; fence write's default --request-id)"},
	{Name: "LOCKLEDGER_FENCING_TOKEN", Scope: NamedCommands, Commands: []string{"run", "write"}, Set: true,
		Meaning: "set by run for its command: the holding's fencing token, to pass to what the lock protects (fence write's default --token)"},
}

// EnvironmentOf is the variables that matter to cmd, in the table's order:
// all of them for the root command.
func EnvironmentOf(cmd *cobra.Command) []EnvVar {
	if !cmd.HasParent() {
		return Environment
	}
	var out []EnvVar
	for _, v := range Environment {
		if v.matters(cmd) {
			out = append(out, v)
		}
	}
	return out
}

func (v EnvVar) matters(cmd *cobra.Command) bool {
	name := cmd.Name()
	switch v.Scope {
	case EveryCommand:
		return true
	case NamedCommands:
		return slices.Contains(v.Commands, name)
	}
	if slices.Contains(v.Commands, name) {
		return true
	}
	if invocation.NeedsNoRoot[name] {
		return false
	}
	if v.Scope == FlagCommands {
		return flagShown(cmd, v.Flag)
	}
	return true
}

// writeEnvironment writes the environment help topic.
func writeEnvironment(w io.Writer) {
	for i, head := range []string{"Environment variables lockledger reads (a flag given on the command line wins over its variable):",
		"Set by lockledger run for the command it runs:"} {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s\n\n", head)
		for _, v := range Environment {
			if v.Set == (i > 0) {
				fmt.Fprintf(w, "  %s\n", v.Name)
				writeWrapped(w, "      ", v.Meaning)
			}
		}
	}
}
