// Package fencecmd holds the fence command: fence write, the file fence
// (package fence) for a job that holds a lock and writes a file another
// holder may also write.
package fencecmd

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/fence"
	"github.com/lockledger/lockledger/ledger"
)

// Commands are this package's commands below the root.
var Commands = []invocation.Command{
	{Listing: fenceListing, New: NewFence},
	{Listing: recorderListing, New: NewRecorder},
}

// The variables run sets for its command, which fence write reads.
const (
	EnvToken     = "LOCKLEDGER_FENCING_TOKEN"
	EnvLock      = "LOCKLEDGER_LOCK"
	EnvRequestID = "LOCKLEDGER_REQUEST_ID"
)

var fenceListing = invocation.Listing{
	Use:   "fence",
	Short: "Write a file only with a fencing token not below the last one it saw",
}

func NewFence(g *invocation.Globals) *cobra.Command {
	cmd := fenceListing.Of(&cobra.Command{
		Long: `A fencing token (LOCKLEDGER_FENCING_TOKEN in run's command, printed by
acquire) goes up with every acquisition of a lock. A resource that keeps
the highest token it has seen and refuses a lower one is safe from a holder
that lost its lock without knowing it (paused, partitioned, past its TTL)
and writes after the next holder did. fence write is that check for a
file; docs/fencing.md also gives the PostgreSQL fence and the Go API.`,
		Args: invocation.NoArgs,
	})
	cmd.AddCommand(newWrite(g))
	return cmd
}

type writeOptions struct {
	g         *invocation.Globals
	path      string
	token     string
	lock      string
	requestID string
	cmd       *cobra.Command // for its global flags (the recorder)
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
		Args: invocation.ArgCount(func(n int) bool { return n == 1 }, "write: takes exactly one path"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.path, o.cmd = args[0], cmd
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
	if err := fence.WriteFile(ctx, o.path, token, o.g.Stdin(ctx)); err != nil {
		if stale, ok := fence.AsStale(err); ok {
			o.record(stale)
		}
		return err
	}
	o.g.Log.Debug("written", "path", o.path, "token", token)
	return nil
}

// record has the refusal appended to the ledger by a detached recorder
// (fence.RecorderCmd: this executable, in a session of its own), and
// waits for it: a job's run that finds its lock lost stops the job's
// process group, TERM then KILL, and this process with it, but not the
// recorder, which records the refusal all the same. The recorder says on
// stderr why it could not: the write stays refused either way.
func (o *writeOptions) record(stale *fence.StaleError) {
	self, err := os.Executable()
	if err == nil {
		cmd := fence.RecorderCmd(self, invocation.GlobalArgs(o.cmd), o.lock,
			ledger.Identity{RequestID: o.requestID, PID: os.Getppid()}, stale, time.Now().Add(fence.RecordFor))
		cmd.Stderr = o.g.IO.ErrOut
		if err = cmd.Start(); err == nil {
			if cmd.Wait() == nil {
				o.g.Log.Debug("recorded", "event", events.FenceRejected, "lock", o.lock)
			}
			return // the recorder said why it could not
		}
	}
	o.g.Log.Error("the refused write was NOT recorded in the ledger: it could not start its recorder; the write was refused all the same",
		append(o.g.WhereAttr(), "lock", o.lock, "err", err)...)
}

var recorderListing = invocation.Listing{
	Use:    fence.RecorderCommand,
	Hidden: true,
}

// NewRecorder is the detached recorder of one refusal (fence.RecorderCmd),
// which fence write and fence.RecordDetached start. It retries while the
// ledger cannot take the event, until --until; a root with no ledger is
// final.
func NewRecorder(g *invocation.Globals) *cobra.Command {
	var lock, until string
	var id ledger.Identity
	var p events.FenceRejectedPayload
	cmd := recorderListing.Of(&cobra.Command{
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Its starter may be gone, and with it the reader of the
			// stderr it shares: a warning then fails, the record not.
			signal.Ignore(syscall.SIGPIPE)
			end, err := time.Parse(time.RFC3339Nano, until)
			if err != nil {
				return events.Invalid("--until", until, "must be an RFC 3339 time")
			}
			if err := events.ValidateLockName(lock); err != nil {
				return err
			}
			ctx, cancel := context.WithDeadline(context.WithoutCancel(cmd.Context()), end)
			defer cancel()
			err = invocation.RetryRecord(ctx, g, invocation.Rewrites, final, func(l *ledger.Ledger) error {
				return l.RecordFenceRejected(ctx, lock, id, p)
			})
			if err == nil {
				return nil
			}
			what, code := "it could not take the event", invocation.ExitFailure
			if errors.Is(err, ledger.ErrNoLedger) {
				what, code = "there is none", invocation.ExitNoLedger
			}
			g.Log.Error("the refused write was NOT recorded in the ledger: "+what+"; the write was refused all the same",
				append(g.WhereAttr(), "lock", lock, "err", err)...)
			return &invocation.ExitError{Code: code}
		},
	})
	fl := cmd.Flags()
	fl.StringVar(&lock, "lock", "", "")
	fl.StringVar(&id.RequestID, "request-id", "", "")
	fl.StringVar(&id.Actor, "actor", "", "")
	fl.IntVar(&id.PID, "pid", 0, "")
	fl.StringVar(&p.Fence, "fence", "", "")
	fl.StringVar(&p.Resource, "resource", "", "")
	fl.Int64Var(&p.StaleToken, "stale-token", 0, "")
	fl.Int64Var(&p.CurrentToken, "current-token", 0, "")
	fl.StringVar(&until, "until", "", "")
	return cmd
}

// final tells the recorder to stop retrying: no ledger at the root, or an
// event the ledger refuses as invalid, will not change.
func final(err error) bool {
	var inv *events.InvalidError
	return errors.Is(err, ledger.ErrNoLedger) || errors.As(err, &inv)
}
