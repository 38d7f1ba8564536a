package cli

import (
	"slices"

	"github.com/spf13/cobra"
)

// signingFlags are the global flags of signed checkpoints and witnesses
// (sign.go, witnessurl.go). Every command parses them, as it parses every
// global flag, so that an alias or a script that passes them everywhere
// keeps working; only the commands that write to a ledger (export and
// verify record their read; verify also reads --witness) show them in
// their help and man page.
var signingFlags = []string{"signing-key", "witness", "witness-url", "unsigned", "checkpoint-every", "checkpoint-interval"}

// readOnlyCommands are the commands that never write to a ledger, and so
// use none of signingFlags (completion and help write nothing at all). A
// command not named here shows them: a new command that writes does not
// lose them by being forgotten.
var readOnlyCommands = map[string]bool{
	"status": true, "list": true, "history": true, "timeline": true, "who": true, "replay": true,
	"metrics": true, "prove": true, "verify-proof": true, "keygen": true, "version": true,
	"completion": true, "help": true,
}

// usesSigningFlags says whether cmd may write to a ledger: every command
// but the root and those below a read-only one.
func usesSigningFlags(cmd *cobra.Command) bool {
	if !cmd.HasParent() {
		return false
	}
	for c := cmd; c.HasParent(); c = c.Parent() {
		if readOnlyCommands[c.Name()] {
			return false
		}
	}
	return true
}

// HideUnusedFlags hides the global flags cmd does not use from what is
// generated from it (help, man page) until restore is called. They are
// still parsed.
func HideUnusedFlags(cmd *cobra.Command) (restore func()) {
	if usesSigningFlags(cmd) {
		return func() {}
	}
	pf := cmd.Root().PersistentFlags()
	var hidden []string
	for _, name := range signingFlags {
		if f := pf.Lookup(name); f != nil && !f.Hidden {
			f.Hidden = true
			hidden = append(hidden, name)
		}
	}
	return func() {
		for _, name := range hidden {
			pf.Lookup(name).Hidden = false
		}
	}
}

// flagShown says whether cmd has the flag name and shows it in its help.
func flagShown(cmd *cobra.Command, name string) bool {
	if cmd.Flags().Lookup(name) == nil && cmd.InheritedFlags().Lookup(name) == nil {
		return false
	}
	return !slices.Contains(signingFlags, name) || usesSigningFlags(cmd)
}

// hideUnusedFlagsInHelp makes every command's help leave out the global
// flags it does not use.
func hideUnusedFlagsInHelp(root *cobra.Command) {
	help := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		restore := HideUnusedFlags(c)
		defer restore()
		help(c, args)
	})
}
