// Package fencecmd holds the fence command: fence write, the file fence
// (package fence) for a job that holds a lock and writes a file another
// holder may also write.
package fencecmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/fence"
	"github.com/lockledger/lockledger/ledger"
)

// Commands are this package's commands below the root.
var Commands = []invocation.Command{
	{Listing: fenceListing, New: NewFence, Sequential: true},
}

// The variables run sets for its command, which fence write reads.
const (
	EnvToken     = "LOCKLEDGER_FENCING_TOKEN"
	EnvLock      = "LOCKLEDGER_LOCK"
	EnvRequestID = "LOCKLEDGER_REQUEST_ID"
)

// recordWait bounds how long a refusal waits to be recorded: past it
// the write is still refused, with a warning.
const recordWait = 10 * time.Second

var fenceListing = invocation.Listing{
	Use:   "fence",
	Short: "Write a file only with a fencing token not below the last one it saw",
}

func NewFence(g *invocation.Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   fenceListing.Use,
		Short: fenceListing.Short,
		Long: `A fencing token (LOCKLEDGER_FENCING_TOKEN in run's command, printed by
acquire) goes up with every acquisition of a lock. A resource that keeps
the highest token it has seen and refuses a lower one is safe from a holder
that lost its lock without knowing it (paused, partitioned, past its TTL)
and writes after the next holder did. fence write is that check for a
file; docs/fencing.md also gives the PostgreSQL fence and the Go API.`,
		Args: invocation.NoArgs,
	}
	cmd.AddCommand(newWrite(g))
	return cmd
}

type writeOptions struct {
	g         *invocation.Globals
	path      string
	token     string
	lock      string
	requestID string
}

func newWrite(g *invocation.Globals) *cobra.Command {
	o := &writeOptions{g: g}
	cmd := &cobra.Command{
		Use:   "write PATH [--token T] [--lock NAME] < DATA",
		Short: "Replace PATH with stdin if the token is not below PATH's",
		Long: `Replace the file PATH with what stdin holds, if T is not below the token
kept beside it in PATH.fence (equal passes: one holding writes many
times); then T is PATH's token. The check and the replace run under an
flock of PATH.fence; stdin goes to a new file in PATH's directory, synced,
renamed over PATH once T is on disk. PATH is never followed: a symlink,
a directory or a FIFO there is refused (exit 1), and so is a PATH.fence
that is not a regular file holding a token.

A lower token is refused with exit 5 (as a lost lock: a later holding of
the lock has written PATH, so this job's lock is gone), PATH untouched,
and recorded in the ledger as fence_rejected on the lock: the lock, both
tokens, PATH, and this process's parent (the job) with its host and
request id. When the ledger cannot take the event, the write is refused
all the same and stderr says it was not recorded.`,
		Example: `  lockledger run deploy -- sh -c 'render-config | lockledger fence write /srv/app/config.json'
  lockledger fence write --token 42 --lock deploy /srv/app/config.json < config.json`,
		Args: onePath,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.path = args[0]
			return runWrite(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.token, "token", os.Getenv(EnvToken), "the writer's fencing token (env "+EnvToken+", which run sets)")
	f.StringVar(&o.lock, "lock", os.Getenv(EnvLock), "the lock the token is of, on which a refusal is recorded (env "+EnvLock+")")
	f.StringVar(&o.requestID, "request-id", os.Getenv(EnvRequestID), "the writer's request id, recorded with a refusal (env "+EnvRequestID+"; default: a new one)")
	return cmd
}

func runWrite(ctx context.Context, o *writeOptions) error {
	if o.token == "" {
		return events.Invalid("--token", "", "is required: the writer's fencing token (or "+EnvToken+", which run sets)")
	}
	token, err := fence.ParseToken("--token", o.token)
	if err != nil {
		return err
	}
	if o.lock == "" {
		return events.Invalid("--lock", "", "is required: the lock the token is of, where a refusal is recorded (or "+EnvLock+")")
	}
	if err := events.ValidateLockName(o.lock); err != nil {
		return err
	}
	if o.requestID != "" {
		if err := events.ValidateRequestID(o.requestID); err != nil {
			return err
		}
	}
	werr := fence.WriteFile(ctx, o.path, token, o.g.IO.In)
	if stale, ok := fence.AsStale(werr); ok {
		o.record(ctx, stale)
		return werr
	}
	if werr != nil {
		return werr
	}
	o.g.Log.Debug("written", "path", o.path, "token", token)
	return nil
}

// record appends the refusal to the ledger, or says on stderr why it
// could not: the write stays refused either way.
func (o *writeOptions) record(ctx context.Context, stale *fence.StaleError) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordWait)
	defer cancel()
	l, err := o.g.Open(ctx, invocation.Rewrites, ledger.WithBusyTimeout(recordWait))
	if err == nil {
		err = l.RecordFenceRejected(ctx, o.lock, ledger.Identity{RequestID: o.requestID, PID: os.Getppid()}, stale.Payload())
		o.g.Finish(l)
	}
	if err != nil {
		what := "it could not take the event"
		if errors.Is(err, ledger.ErrNoLedger) {
			what = "there is none"
		}
		o.g.Log.Warn("the refused write was NOT recorded in the ledger: "+what+"; the write was refused all the same",
			append(o.g.WhereAttr(), "lock", o.lock, "err", err)...)
		return
	}
	o.g.Log.Debug("recorded", "event", events.FenceRejected, "lock", o.lock)
}

// onePath is write's Args: one path.
func onePath(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return &invocation.UsageError{Err: fmt.Errorf("%s: takes exactly one path, got %d arguments", cmd.Name(), len(args))}
	}
	return nil
}
