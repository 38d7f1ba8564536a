package cli

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/ledger"
)

type releaseOptions struct {
	g           *globals
	lock        string
	requestID   string
	actor       string
	result      string
	failureStep string
	exitCode    int
	force       bool
}

func newRelease(g *globals) *cobra.Command {
	o := &releaseOptions{g: g}
	cmd := &cobra.Command{
		Use:   "release NAME --request-id R",
		Short: "Free a lock you hold",
		Long: `Free a lock held by request R and record the result. Releasing a lock
you already released is a no-op (exit 0). A lock held by someone else is
refused with exit 5 and stays held, and the refusal is recorded as
action_refused; --force releases it anyway and records forced: true with
the holder it released.`,
		Example: `  lockledger release deploy-prod --request-id "$rid"
  lockledger release deploy-prod --request-id "$rid" --result failure --failure-step migrate
  lockledger release deploy-prod --force --actor oncall   # someone else's lock, audited`,
		Args: exactlyOneLock,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.lock = args[0]
			if !cmd.Flags().Changed("exit-code") {
				o.exitCode = -1
			}
			return runRelease(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.requestID, "request-id", "", "the request id acquire printed (required unless --force)")
	fl.StringVar(&o.actor, "actor", "", "who releases (default $LOCKLEDGER_ACTOR, else $USER)")
	fl.StringVar(&o.result, "result", "success", "success, failure or cancelled")
	fl.StringVar(&o.failureStep, "failure-step", "", "the step that failed (with --result failure)")
	fl.IntVar(&o.exitCode, "exit-code", -1, "the job's exit code, recorded with the release (0-255)")
	fl.BoolVar(&o.force, "force", false, "release a lock held by someone else (recorded as forced)")
	return cmd
}

func runRelease(ctx context.Context, o *releaseOptions) error {
	if err := events.ValidateLockName(o.lock); err != nil {
		return err
	}
	if o.requestID == "" && !o.force {
		return events.Invalid("--request-id", "", "is required (or --force to release someone else's lock)")
	}
	if o.requestID != "" {
		if err := events.ValidateRequestID(o.requestID); err != nil {
			return err
		}
	}
	switch o.result {
	case events.ResultSuccess, events.ResultFailure, events.ResultCancelled:
	default:
		return events.Invalid("--result", o.result, "must be success, failure or cancelled")
	}
	if o.failureStep != "" && o.result != events.ResultFailure {
		return events.Invalid("--failure-step", o.failureStep, "needs --result failure")
	}
	var code *int
	if o.exitCode != -1 {
		if o.exitCode < 0 || o.exitCode > 255 {
			return events.Invalid("--exit-code", itoa(o.exitCode), "must be 0-255")
		}
		code = &o.exitCode
	}
	l, err := o.g.open(ctx, writes)
	if err != nil {
		return err
	}
	defer o.g.finish(l)
	err = l.Release(ctx, ledger.ReleaseRequest{Lock: o.lock,
		Identity: ledger.Identity{RequestID: o.requestID, Actor: o.actor, PID: os.Getppid()},
		Result:   o.result, FailureStep: o.failureStep, ExitCode: code, Force: o.force})
	if err != nil {
		return err
	}
	if o.g.json {
		writeJSON(o.g.io.Out, map[string]any{"status": "released", "lock_name": o.lock, "state": events.StateFree,
			"request_id": o.requestID})
	}
	o.g.log.Info("released", "lock", o.lock)
	return nil
}
