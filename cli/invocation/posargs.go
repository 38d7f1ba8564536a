package invocation

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/events"
)

func LockArg(args []string) (string, error) {
	if len(args) != 1 {
		return "", events.Invalid("lock name", strings.Join(args, " "), "exactly one lock name is required")
	}
	return args[0], events.ValidateLockName(args[0])
}

func ExactlyOneLock(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return &UsageError{fmt.Errorf("%s: takes exactly one lock name, got %d arguments", cmd.Name(), len(args))}
	}
	return nil
}

func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) != 0 {
		return &UsageError{fmt.Errorf("%s: takes no arguments, got %q", cmd.Name(), args)}
	}
	return nil
}
