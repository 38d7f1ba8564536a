package invocation

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/events"
)

// OnLock is the RunE of a command that takes one lock name
// (ExactlyOneLock): the name, checked, put in *lock, then run.
func OnLock(lock *string, run func(context.Context) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		*lock = args[0]
		if err := events.ValidateLockName(*lock); err != nil {
			return err
		}
		return run(cmd.Context())
	}
}

// ExactlyOneLock is a command's Args when it takes one lock name.
func ExactlyOneLock(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return &UsageError{fmt.Errorf("%s: takes exactly one lock name, got %d arguments", cmd.Name(), len(args))}
	}
	return nil
}

// NoArgs is a command's Args when it takes no positional arguments.
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) != 0 {
		return &UsageError{fmt.Errorf("%s: takes no arguments, got %q", cmd.Name(), args)}
	}
	return nil
}

// ArgCount accepts the arguments whose number ok allows; takes says what
// the command takes.
func ArgCount(ok func(n int) bool, takes string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if !ok(len(args)) {
			return &UsageError{fmt.Errorf("%s, got %d arguments", takes, len(args))}
		}
		return nil
	}
}
