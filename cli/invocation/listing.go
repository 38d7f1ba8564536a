package invocation

import (
	"fmt"

	"github.com/spf13/cobra"
)

// Listing is what the root needs of a command without building it: the
// name (the first word of Use) and aliases it dispatches and suggests on,
// and the Short, Hidden and GroupID of its help listing. A command's
// constructor takes these fields from its Listing, so each is written once.
type Listing struct {
	Use     string
	Short   string
	Aliases []string
	Hidden  bool
	GroupID string
}

// Command is a command below the root: its Listing, and New, which builds
// it in full (flags, subcommands, run function).
type Command struct {
	Listing
	New func(*Globals) *cobra.Command
}

// Stub is the command as the root lists it, with nothing else: no flags,
// no subcommands, and a run function that fails, since a stub stands in
// only for commands a process does not run.
func (l Listing) Stub() *cobra.Command {
	return l.Of(&cobra.Command{RunE: func(cmd *cobra.Command, _ []string) error {
		return fmt.Errorf("%s: only listed in this process, not built", cmd.Name())
	}})
}

// Of is cmd with the fields of its listing.
func (l Listing) Of(cmd *cobra.Command) *cobra.Command {
	cmd.Use, cmd.Short, cmd.Aliases, cmd.Hidden, cmd.GroupID = l.Use, l.Short, l.Aliases, l.Hidden, l.GroupID
	return cmd
}
