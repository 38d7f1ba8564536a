package lockcmd

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/ledger"
)

type releaseOptions struct {
	g           *invocation.Globals
	lock        string
	requestID   string
	actor       string
	result      string // "" when --result is not given
	failureStep string
	exitCode    int
	force       bool
	reason      string
	yes         bool
	secret      string // --secret: shown by ps, so the file or the environment is preferred
	secretFile  string // --secret-file: a file, or - for standard input
}

// EnvReleaseSecret is the release secret a release presents when neither
// --secret nor --secret-file is given.
const EnvReleaseSecret = "LOCKLEDGER_RELEASE_SECRET"

var releaseListing = invocation.Listing{
	Use:   "release NAME --request-id R",
	Short: "Free a lock you hold",
}

func NewRelease(g *invocation.Globals) *cobra.Command {
	o := &releaseOptions{g: g}
	cmd := releaseListing.Of(&cobra.Command{
		Long: `Free a lock held by request R and record the result: --result, else
failure when --exit-code is not 0, else success. Releasing a lock you
already released (or --force on a free lock) releases nothing: it says
"not held, nothing to release" (status not_held with --json), records
nothing and exits 0. A lock held by someone else, or one R lost, is
refused with exit 5 and stays held, and the refusal is recorded as
action_refused; --force releases it anyway and records forced: true, you
as the actor, the holder it released, result forced (unless --result or
--exit-code says how the holder's work ended) and --reason TEXT (note),
which --force requires. On a terminal --force asks for confirmation (30 s,
default No) when the lock has a holder; elsewhere it needs --yes (else
exit 2).

Without --force a release is the holder's own: R's holding is released
only by the uid that acquired it, and not at all while its holder is a
running lockledger run (which releases it when its command ends); anyone
else who names R is refused the same way (exit 5, recorded), unless it
presents R's release secret (acquire --print-release-secret or
--release-secret-file): then it is accepted from any uid, recorded with
authorized_by release_secret. The secret is read from
$LOCKLEDGER_RELEASE_SECRET, --secret-file PATH (- for standard input) or
--secret S; prefer the first two, since ps shows every process's
arguments. A wrong secret is refused (exit 5, recorded). --force ignores
$LOCKLEDGER_RELEASE_SECRET. The release
is recorded under your actor, pid and uid; when you are not the holder
itself, held_by and released_request_id name the holding it ended.

--force --request-id R is a compare-and-release, like terraform
force-unlock LOCK_ID: it releases the lock only while R holds it
(recorded as forced, by you); held by anyone else it is refused with
exit 5 naming the holder, recorded as action_refused, the lock left as
it is; free, there is nothing to release (exit 0).

A file at the lock's path that the ledger did not write is never
removed; when an unreadable one is left there, the lock stays held by it
(to fail safe), and release says so: lockledger project keeps it aside.`,
		Example: `  lockledger release deploy-prod --request-id "$rid"
  lockledger release deploy-prod --request-id "$rid" --result failure --failure-step migrate
  lockledger release deploy-prod --force --actor oncall --reason "INC-42: runner gone"   # someone else's lock, audited; asks
  lockledger release deploy-prod --force --request-id req_01J... --reason "job cancelled" --yes   # only if that request still holds it`,
		Args: invocation.ExactlyOneLock,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.lock = args[0]
			if cmd.Flags().Changed("result") && o.result == "" {
				return events.Invalid("--result", "", "must be success, failure or cancelled")
			}
			return runRelease(cmd.Context(), o)
		},
	})
	fl := cmd.Flags()
	fl.StringVar(&o.requestID, "request-id", "", "the request id acquire printed (required unless --force)")
	fl.StringVar(&o.actor, "actor", "", "who releases (default $LOCKLEDGER_ACTOR, else $USER, else the OS user name)")
	fl.StringVar(&o.result, "result", "", "success, failure or cancelled (default: failure when --exit-code is not 0, else success)")
	fl.StringVar(&o.failureStep, "failure-step", "", "the step that failed (with --result failure or a non-zero --exit-code)")
	fl.IntVar(&o.exitCode, "exit-code", -1, "the job's exit code, recorded with the release (0-255)")
	fl.BoolVar(&o.force, "force", false, "release a lock held by someone else (recorded as forced); with --request-id only if that request holds it")
	fl.StringVar(&o.reason, "reason", "", "with --force: why (required; recorded with the release)")
	fl.BoolVar(&o.yes, "yes", false, "with --force: do not ask for confirmation")
	fl.StringVar(&o.secret, "secret", "", "the release secret acquire gave R's acquirer (ps shows it: prefer $"+EnvReleaseSecret+" or --secret-file)")
	fl.StringVar(&o.secretFile, "secret-file", "", "read the release secret from this file (- for standard input)")
	return cmd
}

func runRelease(ctx context.Context, o *releaseOptions) error {
	if err := events.ValidateLockName(o.lock); err != nil {
		return err
	}
	if o.requestID == "" && !o.force {
		return events.Invalid("--request-id", "", "is required (or --force to release someone else's lock)")
	}
	if o.reason != "" && !o.force {
		return events.Invalid("--reason", o.reason, "goes with --force (a holder's own release records --result)")
	}
	if o.requestID != "" {
		if err := events.ValidateRequestID(o.requestID); err != nil {
			return err
		}
	}
	switch o.result {
	case "", events.ResultSuccess, events.ResultFailure, events.ResultCancelled:
	default:
		return events.Invalid("--result", o.result, "must be success, failure or cancelled")
	}
	var code *int
	if o.exitCode != -1 {
		if o.exitCode < 0 || o.exitCode > 255 {
			return events.Invalid("--exit-code", strconv.Itoa(o.exitCode), "must be 0-255")
		}
		code = &o.exitCode
	}
	failed := o.result == events.ResultFailure || o.result == "" && code != nil && *code != 0
	if o.failureStep != "" && !failed {
		return events.Invalid("--failure-step", o.failureStep, "needs --result failure (or a non-zero --exit-code)")
	}
	if o.force && strings.TrimSpace(o.reason) == "" {
		return events.Invalid("--reason", o.reason, "is required with --force: say why the lock is released")
	}
	secret, err := o.releaseSecret(ctx)
	if err != nil {
		return err
	}
	l, err := openAsking(ctx, o.g, o.lock, o.force && !o.yes, "release", "--force", func(s *ledger.LockStatus) string {
		if h := s.Holder; h != nil {
			return termtext.Sprintf("Lock %s is %s, held by %s (%s, %s).\nRelease it anyway (recorded as forced, by you)?",
				s.Name, s.State, h.Actor, h.RequestID, invocation.ProcessText(h.PID, h.HostID))
		}
		return ""
	}, "not releasing it")
	if err != nil {
		return err
	}
	defer o.g.Finish(l)
	out, err := l.Release(ctx, ledger.ReleaseRequest{Lock: o.lock,
		Identity: ledger.Identity{RequestID: o.requestID, Actor: o.actor, PID: os.Getppid()},
		Result:   o.result, FailureStep: o.failureStep, ExitCode: code, Force: o.force, Note: o.reason, Secret: secret})
	if err != nil {
		return err
	}
	if !out.Released {
		printNotHeld(o, out)
		return nil
	}
	// Release never removes a file that is not the ledger's: an unreadable
	// one at the lock's path still holds it (to fail safe).
	var blocked *ledger.UnreadableFile
	if s, err := l.Status(ctx, o.lock); err == nil {
		blocked = s.Corrupt
	}
	if o.g.JSON {
		obj := map[string]any{"status": "released", "lock_name": o.lock, "state": events.StateFree,
			"request_id": o.requestID, "seq": out.Seq, "result": out.Result}
		if out.FencingToken != 0 {
			obj["fencing_token"] = out.FencingToken
		}
		if out.Forced {
			obj["forced"], obj["released_request_id"] = true, out.ReleasedRequestID
		}
		if blocked != nil {
			obj["state"], obj["corrupt"] = events.StateHeld, blocked
		}
		invocation.WriteJSON(o.g.IO.Out, obj)
	}
	o.g.Log.Info("released", "lock", o.lock, "result", out.Result)
	if blocked != nil {
		// An error line, shown with --quiet too: nobody can take the lock
		// until someone runs project, though the release succeeded.
		o.g.Log.Error("the lock stays blocked: an "+blocked.String()+" sits at its path (left in place); "+
			"`lockledger project` moves it aside, kept and recorded", "lock", o.lock)
	}
	return nil
}

// releaseSecret is the release secret the caller presents: --secret,
// --secret-file, else $LOCKLEDGER_RELEASE_SECRET (not with --force, which
// needs none); "" for none. The secret never appears in an error.
func (o *releaseOptions) releaseSecret(ctx context.Context) (string, error) {
	switch {
	case o.secret != "" && o.secretFile != "":
		return "", events.Invalid("--secret-file", o.secretFile, "cannot be combined with --secret")
	case (o.secret != "" || o.secretFile != "") && o.force:
		return "", events.Invalid("--secret", "", "goes without --force (a forced release needs no secret)")
	case (o.secret != "" || o.secretFile != "") && o.requestID == "":
		return "", events.Invalid("--secret", "", "needs --request-id: a secret releases the holding it was given for")
	case o.secret != "":
		return o.secret, nil
	case o.secretFile != "":
		return readSecretFile(ctx, o.g, o.secretFile)
	case o.force:
		return "", nil
	}
	return strings.TrimSpace(os.Getenv(EnvReleaseSecret)), nil
}

// readSecretFile reads a secret from path (- for standard input): its
// first line, without surrounding white space.
func readSecretFile(ctx context.Context, g *invocation.Globals, path string) (string, error) {
	b, err := g.ReadInput(ctx, "--secret-file", path, 4096, true)
	var ie *invocation.Interrupt
	switch {
	case errors.As(err, &ie):
		// Kept for its exit code, 128+N: cli.Main knows of INT, TERM
		// and HUP, not of the QUIT that ReadInput took while the
		// secret was typed.
		return "", &invocation.Interrupt{Signal: ie.Signal, Err: events.Invalid("--secret-file", path, "cannot be read: "+err.Error())}
	case err != nil && !errors.As(err, new(*events.InvalidError)):
		return "", events.Invalid("--secret-file", path, "cannot be read: "+err.Error())
	case err != nil:
		return "", err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	if line = strings.TrimSpace(line); line == "" {
		return "", events.Invalid("--secret-file", path, "holds no secret (its first line is empty)")
	}
	return line, nil
}

// printNotHeld says that a release found nothing to release, and why.
func printNotHeld(o *releaseOptions, out *ledger.ReleaseOutcome) {
	attrs := []any{"lock", o.lock, "state", out.State}
	obj := map[string]any{"status": "not_held", "lock_name": o.lock, "state": out.State, "request_id": o.requestID,
		"message": "not held, nothing to release"}
	if out.ReleasedSeq > 0 {
		attrs = append(attrs, "released_seq", out.ReleasedSeq)
		obj["released_seq"] = out.ReleasedSeq
	}
	if out.Holder != nil {
		attrs = append(attrs, "held_by", out.Holder.RequestID)
		obj["held_by"] = events.HolderOf(*out.Holder)
	}
	if o.g.JSON {
		invocation.WriteJSON(o.g.IO.Out, obj)
	}
	o.g.Log.Info("not held, nothing to release", attrs...)
}
