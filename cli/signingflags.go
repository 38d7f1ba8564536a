package cli

import (
	"github.com/spf13/cobra"
)

// signingFlags are the global flags of signed checkpoints and witnesses
// (sign.go, witnessurl.go). Every command parses them, as it parses every
// global flag, so that an alias or a script that passes them everywhere
// keeps working; only the commands that write to a ledger (or, as verify,
// read the witnesses) show them in their help and man page.
var signingFlags = []string{"signing-key", "witness", "witness-url", "unsigned", "checkpoint-every", "checkpoint-interval"}

// signingCommands are the commands that use signingFlags: the ones that
// write events (a lock action, a recorded export or verify, a checkpoint,
// a projection, a pin) and verify, which reads --witness.
var signingCommands = map[string]bool{
	"acquire": true, "heartbeat": true, "release": true, "steal": true, "run": true,
	"init": true, "import": true, "project": true, "checkpoint": true, "trust": true,
	"export": true, "verify": true, "watch-holder": true, "record-loss": true,
}

// usesSigningFlags says whether cmd (or the command it is a subcommand
// of, as trust's) writes to a ledger.
func usesSigningFlags(cmd *cobra.Command) bool {
	for c := cmd; c != nil && c.HasParent(); c = c.Parent() {
		if signingCommands[c.Name()] {
			return true
		}
	}
	return false
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
	for _, s := range signingFlags {
		if s == name {
			return usesSigningFlags(cmd)
		}
	}
	return true
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
