package cli

import "github.com/spf13/cobra"

// auditCommands are the read side of the ledger: history, timeline, who,
// replay, verify, export and project.
func auditCommands(g *globals) []*cobra.Command {
	return nil
}
