package invocation

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/events"
)

// EnvRoot names the ledger's directory when --root is not given.
const EnvRoot = "LOCKLEDGER_ROOT"

// RootHelp is how the default of --root is found, for the flag's help.
const RootHelp = "$" + EnvRoot + ", else $XDG_STATE_HOME/lockledger, else ~/.local/state/lockledger"

// DefaultRoot is the root a command uses when neither --root nor
// LOCKLEDGER_ROOT is set: this user's state directory, the same
// wherever the command runs. It fails when no home directory can be
// found (HOME unset or relative and no passwd entry for the uid).
func DefaultRoot() (string, error) {
	if x := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "lockledger"), nil
	}
	home := os.Getenv("HOME")
	if !filepath.IsAbs(home) {
		home = ""
		if u, err := user.LookupId(strconv.Itoa(os.Getuid())); err == nil && filepath.IsAbs(u.HomeDir) {
			home = u.HomeDir
		}
	}
	if home == "" {
		return "", events.Invalid("--root", "", fmt.Sprintf(
			"must be given, or %s set: uid %d has no home directory (HOME is unset and the passwd database has no entry) to hold the default ~/.local/state/lockledger",
			EnvRoot, os.Getuid()))
	}
	return filepath.Join(home, ".local", "state", "lockledger"), nil
}

// NeedsNoRoot are the commands that never touch a ledger (and the shell's
// completion requests, which offer no lock names without a root).
var NeedsNoRoot = map[string]bool{"version": true, "keygen": true, "verify-proof": true, "help": true, "completion": true,
	"bash": true, "zsh": true, "fish": true, "powershell": true, cobra.ShellCompRequestCmd: true, cobra.ShellCompNoDescRequestCmd: true}

// ResolveRoot settles g.root: --root as given (never empty), else
// LOCKLEDGER_ROOT (the flag's default), else DefaultRoot. A command that
// needs no ledger runs without one.
func (g *Globals) ResolveRoot(name string, given bool) error {
	if given && g.Root == "" {
		return events.Invalid("--root", "", "must not be empty")
	}
	if g.Root != "" {
		return nil
	}
	root, err := DefaultRoot()
	if err != nil && !NeedsNoRoot[name] {
		return err
	}
	g.Root = root
	return nil
}
