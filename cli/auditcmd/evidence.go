package auditcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/evidence"
	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
)

type evidenceOptions struct {
	g   *invocation.Globals
	out string
	invocation.TimeRange
}

var evidenceListing = invocation.Listing{
	Use:   "evidence --since T1 --until T2 [-o FILE]",
	Short: "Write the evidence bundle of an audit period, for verify --evidence",
}

func NewEvidence(g *invocation.Globals) *cobra.Command {
	o := &evidenceOptions{g: g}
	cmd := evidenceListing.Of(&cobra.Command{
		Long: `Write one self-contained file that proves what happened between --since
and --until: the period's events (from the first dated at or after
--since to the last dated at or before --until), the event just before
and just after it, a signed checkpoint at or before its start and one
at or after its end with a consistency proof between them and from the
events to the end, the witnesses' cosignatures of both, the events that
opened the holdings open at its start (with inclusion proofs), the
signer keys this trust store pins for the root, and a summary per lock:
holdings, waits, refusals, steals and forced releases with reasons and
actors, fencing rejections, and whether two exclusive holdings
overlapped.

An auditor checks it offline with lockledger verify --evidence FILE
--verifier-key KEY (docs/evidence.md: the format, and the walk-through).

When no stored checkpoint covers the end of the period yet, evidence
signs one first, as lockledger checkpoint does (it needs the signing
key). -o FILE is written as export writes it.`,
		Example: `  lockledger evidence --since 2026-01-01 --until 2026-04-01 -o q1.evidence.jsonl
  lockledger verify --evidence q1.evidence.jsonl --verifier-key ops.vkey`,
		Args: invocation.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runEvidence(cmd.Context(), o) },
	})
	fl := cmd.Flags()
	fl.StringVarP(&o.out, "output", "o", "", "write to FILE (mode 0600, renamed into place when complete) instead of stdout")
	fl.StringVar(&o.Since, "since", "", "the period's start (RFC 3339, a date, or a duration ago)")
	fl.StringVar(&o.Until, "until", "", "the period's end")
	return cmd
}

func runEvidence(ctx context.Context, o *evidenceOptions) error {
	now := time.Now()
	for _, f := range []struct{ name, value string }{{"--since", o.Since}, {"--until", o.Until}} {
		if f.value == "" {
			return events.Invalid(f.name, "", "is required: the evidence is of the period --since to --until (e.g. --since 2026-01-01 --until 2026-04-01, or --until now)")
		}
	}
	since, until, err := o.TimeRange.Parse(now)
	if err != nil {
		return err
	}
	if until.After(now) {
		return events.Invalid("--until", o.Until, "must not be in the future: the period must be over for its end to be proven")
	}
	err = writeEvidence(ctx, o, since, until, now)
	if errors.Is(err, evidence.ErrNoEndCheckpoint) {
		// Sign the head now: it is after the period, so it shows where
		// the period ends.
		if err := runCheckpointQuietly(ctx, o.g); err != nil {
			return err
		}
		err = writeEvidence(ctx, o, since, until, now)
	}
	return err
}

func runCheckpointQuietly(ctx context.Context, g *invocation.Globals) error {
	return g.Using(ctx, invocation.Rewrites, func(l *ledger.Ledger) error {
		cp, err := l.Checkpoint(ctx)
		if cp != nil {
			g.Log.Info("signed a checkpoint for the end of the period", "size", cp.Size, "key", cp.Key)
			return nil // a witness that failed does not unmake the stored checkpoint
		}
		return err
	})
}

func writeEvidence(ctx context.Context, o *evidenceOptions, since, until, now time.Time) error {
	var m *evidence.Made
	err := o.g.ReadInto(ctx, o.out, func(w io.Writer, r *invocation.Reader) error {
		_, keys, _, err := pinned(o.g)
		if err != nil {
			return err
		}
		m, err = evidence.Make(ctx, r.Tx, evidence.Period{LedgerID: r.Ledger.ID(), Since: since, Until: until, SignerKeys: keys, Now: now}, w)
		return err
	})
	if errors.Is(err, evidence.ErrNoEvents) || errors.Is(err, evidence.ErrNoStartCheckpoint) {
		o.g.SayError(err.Error(), "exit_code", invocation.ExitFailure)
		return &invocation.ExitError{Code: invocation.ExitFailure}
	}
	if err != nil {
		return err
	}
	termtext.Fprintf(o.g.IO.ErrOut, "evidence: seq %d-%d (%d events), checkpoints %d and %d\n",
		m.Header.FirstSeq, m.Header.LastSeq, m.Header.Events, m.Start, m.End)
	return nil
}

// verifyEvidence is verify --evidence: a check of the bundle alone, with
// the keys given, that writes nothing anywhere.
func verifyEvidence(ctx context.Context, o *verifyOptions, opts ...replay.VerifyOption) error {
	if len(o.verifiers) == 0 {
		return &invocation.UsageError{Err: fmt.Errorf("verify: --evidence needs --verifier-key: the keys of the ledger's signers, from its owner")}
	}
	vs, err := verifierKeys(ctx, "--verifier-key", o.verifiers)
	if err != nil {
		return err
	}
	t := replay.Trust{Verifiers: vs}
	if err := o.witnessKeys.Add(ctx, o.g.Root, false, &t); err != nil {
		return err
	}
	f, err := openInput("--evidence", o.evidence, "a bundle lockledger evidence wrote")
	if err != nil {
		return err
	}
	defer f.Close()
	res, err := evidence.Verify(f, t, opts...)
	if err != nil {
		return events.Invalid("--evidence", o.evidence, err.Error())
	}
	return o.g.Answer(res, res.OK, func(w io.Writer) { printEvidence(w, res) })
}

// printEvidence is the auditor's report: the verdict, what the checkpoints
// prove, then the summary, lock by lock, recomputed from the events.
func printEvidence(w io.Writer, res *evidence.Result) {
	h := res.Header
	if res.OK {
		termtext.Fprintf(w, "evidence: OK\n")
	} else {
		termtext.Fprintf(w, "evidence: FAILED (%d problems)\n", len(res.Problems))
		for _, p := range res.Problems {
			termtext.Fprintf(w, "  problem: %s\n", problemText(p))
		}
	}
	termtext.Fprintf(w, "  ledger     %s\n", h.LedgerID)
	termtext.Fprintf(w, "  period     %s to %s: seq %d-%d, %d events\n", h.Since, h.Until, h.FirstSeq, h.LastSeq, h.Events)
	if s := res.Start; s != nil {
		termtext.Fprintf(w, "  start      checkpoint of %d events signed by %s at %s\n", s.Size, s.Key, s.Time.Format(time.RFC3339))
	} else {
		termtext.Fprintf(w, "  start      the log's first event (no checkpoint needed)\n")
	}
	if e := res.End; e != nil {
		termtext.Fprintf(w, "  end        checkpoint of %d events signed by %s at %s\n", e.Size, e.Key, e.Time.Format(time.RFC3339))
	}
	if len(res.Cosigned) > 0 {
		termtext.Fprintf(w, "  cosigned   %s\n", strings.Join(res.Cosigned, ", "))
	}
	if !res.OK || res.Summary == nil {
		return
	}
	sum := res.Summary
	termtext.Fprintf(w, "  complete   seq %d-%d are the signed log's events of the period, none removed or changed\n", h.FirstSeq, h.LastSeq)
	termtext.Fprintf(w, "  exclusive  %s\n", sum.Exclusive)
	for _, o := range sum.Overlaps {
		termtext.Fprintf(w, "    overlap: %s\n", o)
	}
	for _, l := range sum.Locks {
		before := 0
		for _, hl := range l.Holdings {
			if hl.BeforePeriod {
				before++
			}
		}
		termtext.Fprintf(w, "  lock %s: %d holdings (%d from before the period), %d waited, %d refusals, %d steals, %d forced releases, %d fencing rejections\n",
			l.Lock, len(l.Holdings), before, l.Waits, len(l.Refusals), len(l.Steals), len(l.ForcedReleases), len(l.FenceRejections))
		for _, it := range l.Steals {
			termtext.Fprintf(w, "    steal    seq %d %s by %s@%s: %s %s\n", it.Seq, it.At, it.Actor, it.Host, it.What, it.Detail)
		}
		for _, it := range l.ForcedReleases {
			termtext.Fprintf(w, "    forced   seq %d %s by %s@%s: %s %s\n", it.Seq, it.At, it.Actor, it.Host, it.What, it.Detail)
		}
		for _, it := range l.Refusals {
			termtext.Fprintf(w, "    refused  seq %d %s %s by %s@%s: %s\n", it.Seq, it.At, it.What, it.Actor, it.Host, it.Detail)
		}
		for _, it := range l.FenceRejections {
			termtext.Fprintf(w, "    fenced   seq %d %s %s by %s@%s: %s\n", it.Seq, it.At, it.What, it.Actor, it.Host, it.Detail)
		}
	}
}
