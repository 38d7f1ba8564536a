package invocation

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lockledger/lockledger/internal/backoff"
	"github.com/lockledger/lockledger/ledger"
)

// GlobalArgs are the persistent (global) flags given to cmd, as the
// arguments that make another lockledger process open the same ledger
// (a detached recorder, internal/proc.Detached).
func GlobalArgs(cmd *cobra.Command) []string {
	var args []string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if cmd.Root().PersistentFlags().Lookup(f.Name) == nil {
			return // the command's own
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				args = append(args, "--"+f.Name+"="+v)
			}
			return
		}
		args = append(args, "--"+f.Name+"="+f.Value.String())
	})
	return args
}

// RetryRecord opens the ledger for a and runs record on it, again and
// again (backing off to 5 s) until it succeeds, stop says an error is
// final, or ctx ends: the loop of a detached recorder, which writes its
// event as soon as the ledger answers. It returns record's (or Open's)
// last error.
func RetryRecord(ctx context.Context, g *Globals, a Access, stop func(error) bool, record func(*ledger.Ledger) error) error {
	retry := backoff.Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second}
	for {
		l, err := g.Open(ctx, a)
		if err == nil {
			err = record(l)
			g.Finish(l)
			if err == nil {
				return nil
			}
		}
		if stop != nil && stop(err) {
			return err
		}
		if retry.Wait(ctx) != nil {
			return err
		}
	}
}
