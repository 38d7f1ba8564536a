package lockcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/formats"
	"github.com/lockledger/lockledger/internal/proc"
	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/store"
)

type statusOptions struct {
	g      *invocation.Globals
	lock   string
	format string
	file   string
	maxAge string
	check  bool
}

var statusListing = invocation.Listing{
	Use:   "status NAME",
	Short: "Show one lock: free, held, stale or dead, with its holder and ages",
}

func NewStatus(g *invocation.Globals) *cobra.Command {
	o := &statusOptions{g: g}
	cmd := statusListing.Of(&cobra.Command{
		Long: `Show a lock's state. status only reads: it takes no lock and writes
nothing. States: free, held (active holder), stale (no heartbeat within
its TTL; acquire --force takes it), dead (its holder on this host is gone;
the next acquire takes it).

An unreadable lock file (no v1 lock) names no holder: it holds the lock,
to fail safe, and is shown as "unreadable lock file at PATH (N bytes,
modified T)" (JSON: "lock": null and "corrupt": {"path", "size_bytes",
"modified"}). lockledger project keeps it aside.

A root where nothing was ever recorded (no ledger) shows no lock free:
status says "no ledger at ROOT" and exits 6 (--check too), and creates
nothing there.

--check is for scripts, like flock -n: it prints nothing (the status
object with --json) and exits with what acquire would meet: 0 free (or
dead: its holder is gone, the next acquire takes it), 3 held by an active
holder or, free or dead, by waiters queued for it, 4 stale (acquire
--force takes it).

Waiters (acquire --wait, run --wait) are served in the order they queued:
status lists them after the holder ("queue: N waiters, next first"; JSON
"queue": [{"position", "request_id", "actor", "pid", "host_id", "since",
"until", "seq"}]; since and seq: when it joined; until: when its place
lapses unless it renews it, as it does every 5 s while it waits).`,
		Example: `  lockledger status deploy-prod
  lockledger status deploy-prod --json | jq -r .state
  if lockledger status deploy-prod --check; then echo free; fi        # 0 free, 3 held, 4 stale
  lockledger status sprint --format bso --file bso:.sprint-running   # BSO's check-mode return object`,
		Args: invocation.ExactlyOneLock,
		RunE: invocation.OnLock(&o.lock, o.run),
	})
	fl := cmd.Flags()
	fl.StringVar(&o.format, "format", "text", "text, or bso for BSO's check-mode return object (JSON)")
	fl.StringVar(&o.file, "file", "", "with --format bso: the .sprint-running file, as bso:PATH (default: the lock's bso target, else ./.sprint-running)")
	fl.StringVar(&o.maxAge, "max-age", "", "with --format bso: zombie age (default 24h)")
	fl.BoolVar(&o.check, "check", false, "print nothing; exit 0 free (or dead), 3 held, 4 stale, 6 no ledger")
	return cmd
}

func (o *statusOptions) run(ctx context.Context) error {
	switch o.format {
	case "text":
		if o.file != "" || o.maxAge != "" {
			return events.Invalid("--file", o.file, "--file and --max-age go with --format bso")
		}
	case "bso":
		if o.check {
			return events.Invalid("--check", "true", "goes with --format text: the bso check-mode object is its own answer")
		}
		return runStatusBSO(ctx, o)
	default:
		return events.Invalid("--format", o.format, "must be text or bso")
	}
	return o.g.Using(ctx, invocation.Reads, func(l *ledger.Ledger) error {
		s, err := l.Status(ctx, o.lock)
		if err != nil {
			return err
		}
		if o.g.JSON {
			so := statusObject(s)
			so.BehindPin = behindPin(l.Behind())
			invocation.WriteJSON(o.g.IO.Out, so)
		} else if !o.check {
			printStatus(o.g.IO.Out, s, l.Behind())
		}
		if o.check {
			return checkResult(s)
		}
		return nil
	})
}

// checkResult is status --check's answer: the exit code acquire would
// meet, without waiting or forcing (a free lock with waiters queued is
// held by its queue).
func checkResult(s *ledger.LockStatus) error {
	switch s.State {
	case events.StateFree, events.StateDead:
		if len(s.Queue) > 0 {
			return &invocation.ExitError{Code: invocation.ExitBlocked}
		}
		return nil
	case events.StateStale:
		return &invocation.ExitError{Code: invocation.ExitStale}
	}
	return &invocation.ExitError{Code: invocation.ExitBlocked}
}

// printStatus shows s; behind (not nil): the ledger is not what this
// root's pin allows (ledger.Ledger.Behind), so a lock file it does not hold
// may be a holder of the ledger this root saw.
func printStatus(w io.Writer, s *ledger.LockStatus, behind *store.RolledBackError) {
	defer printQueue(w, s.Queue)
	termtext.Fprintf(w, "%s: %s\n", s.Name, s.State)
	h := s.Holder
	if h == nil {
		return
	}
	if s.Corrupt != nil {
		termtext.Fprintf(w, "  %s, not written by the ledger: held, to fail safe\n", s.Corrupt)
		termtext.Fprintf(w, "  `lockledger project` moves it aside (kept beside it, recorded); `lockledger steal %s --active` takes the lock over\n", s.Name)
		return
	}
	if s.Mode == events.ModeShared {
		printShared(w, s)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	invocation.HolderRows(tw, h)
	if len(s.JobPIDs) > 0 {
		termtext.Fprintf(tw, "  job\tpid %d is gone; processes it started still run and hold the lock: pids %s\n", h.PID,
			strings.Trim(fmt.Sprint(s.JobPIDs), "[]"))
	}
	termtext.Fprintf(tw, "  held for\t%s (since %s)\n", invocation.ShortDuration(s.HeldFor), h.CreatedAt)
	if noTTL(s) {
		termtext.Fprintf(tw, "  heartbeat\t%s (no TTL: %s lock files carry none)\n", ago(s.SinceBeat), s.HolderFormat)
	} else {
		termtext.Fprintf(tw, "  heartbeat\t%s (ttl %ds)\n", ago(s.SinceBeat), h.TTLSeconds)
		if at, in := staleAt(s.State, s.StaleSince, s.SinceBeat, h); in != nil {
			termtext.Fprintf(tw, "  stale at\t%s (in %ds) without a heartbeat\n", at, *in)
		}
	}
	if s.Unprobed != "" {
		termtext.Fprintf(tw, "  liveness\tnot probed from here: %s; only its TTL ends it\n", unprobedText(s.Unprobed, h.HostID))
	}
	if s.FencingToken > 0 {
		termtext.Fprintf(tw, "  fencing token\t%d\n", s.FencingToken)
	}
	switch {
	case s.Foreign && behind != nil:
		termtext.Fprintf(tw, "  note\tlock file the ledger does not hold (see stderr): it may be %s; held, to fail safe\n", behind.Theirs())
	case s.Foreign && s.OwnLayout:
		termtext.Fprintf(tw, "  note\tlock file the ledger does not hold, in the ledger's own layout: another tool's that writes it, "+
			"or the ledger's own holder from events it no longer has (a restore, an accepted rollback)\n")
	case s.Foreign:
		termtext.Fprintf(tw, "  note\tlock file written by another tool\n")
	}
	switch {
	case s.Unreadable != nil:
		termtext.Fprintf(tw, "  warning\tan %s sits where the ledger's file should be; `lockledger project` puts the ledger's file back, keeping it aside\n", s.Unreadable)
	case s.Interloper:
		termtext.Fprintf(tw, "  warning\tanother tool's file sits at %s\n", s.Path)
	}
	if p := s.Displaced; p != nil {
		termtext.Fprintf(tw, "  displaced\tthe ledger's holder %s (%s, pid %d on %s) lost the lock to this file\n", p.RequestID, p.Actor, p.PID, p.HostID)
	}
	tw.Flush()
}

// printQueue lists a lock's waiters, next first.
func printQueue(w io.Writer, q []ledger.Waiter) {
	if len(q) == 0 {
		return
	}
	termtext.Fprintf(w, "  queue: %d %s, next first\n", len(q), termtext.Plural(len(q), "waiter", "waiters"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, x := range q {
		termtext.Fprintf(tw, "  %d.\t%s\t%s\t%s\tsince %s\n", x.Position, x.RequestID, x.Actor,
			invocation.ProcessText(x.PID, x.HostID), events.FormatTime(x.Since))
	}
	tw.Flush()
}

// noTTL reports whether s's holder was read from another tool's file whose
// format carries no TTL: its record's ttl_seconds is only a placeholder.
func noTTL(s *ledger.LockStatus) bool {
	return s.HolderFormat != "" && !formats.CarriesTTL(s.HolderFormat)
}

// ago shows how long ago a heartbeat was; one from the future (a clock
// set wrong) says so instead of "0s ago".
func ago(d time.Duration) string {
	if d < -time.Second {
		return (-d).Truncate(time.Second).String() + " in the future"
	}
	return invocation.ShortDuration(d) + " ago"
}

// runStatusBSO answers BSO's check mode for the lock's .sprint-running.
func runStatusBSO(ctx context.Context, o *statusOptions) error {
	var maxAge time.Duration
	if o.maxAge != "" {
		d, err := invocation.ParseDuration("--max-age", o.maxAge)
		if err != nil {
			return err
		}
		maxAge = d
	}
	path := ""
	if o.file != "" {
		ts, err := ParseTargets([]string{o.file})
		if err != nil {
			return err
		}
		if ts[0].Format != formats.NameBSO {
			return events.Invalid("--file", o.file, "must be a bso: file with --format bso")
		}
		path = ts[0].Path
	} else if l, err := o.g.Open(ctx, invocation.Reads); err == nil {
		ts, terr := l.TargetsOf(ctx, o.lock)
		l.Close()
		if terr != nil {
			return terr
		}
		for _, t := range ts {
			if t.Format == formats.NameBSO {
				path = t.Path
			}
		}
	} else if !errors.Is(err, ledger.ErrNoLedger) {
		return err
	}
	if path == "" {
		path = formats.DefaultPath(formats.NameBSO, o.lock)
	}
	data, exists, err := ledger.ReadTargetFile(path)
	if err != nil {
		return err
	}
	invocation.WriteJSON(o.g.IO.Out, formats.BSOCheck(data, exists, time.Now(), ledger.LocalEnv(maxAge)))
	return nil
}

// printShared shows a lock held shared: its mode and limit, then one
// line per holder.
func printShared(w io.Writer, s *ledger.LockStatus) {
	limit := "no limit"
	if s.Limit > 0 {
		limit = fmt.Sprintf("limit %d, %d free", s.Limit, max(s.Limit-int64(len(s.Shared)), 0))
	}
	termtext.Fprintf(w, "  shared by %d (%s)\n", len(s.Shared), limit)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  STATE\tREQUEST\tACTOR\tPID@HOST\tHELD\tHEARTBEAT\tTTL\tTOKEN")
	for _, x := range s.Shared {
		h := x.Holder
		termtext.Fprintf(tw, "  %s\t%s\t%s\t%d@%s\t%s\t%s\t%ds\t%d\n", x.State, h.RequestID, h.Actor, h.PID, h.HostID,
			invocation.ShortDuration(x.HeldFor), ago(x.SinceBeat), h.TTLSeconds, x.FencingToken)
	}
	tw.Flush()
}

// unprobedText says in words why a holder's pid cannot be probed from
// here (ledger.LockStatus.Unprobed).
func unprobedText(why, host string) string {
	switch why {
	case proc.UnprobedOtherHost:
		return "on another host (" + host + ")"
	case proc.UnprobedNoProcess:
		return "no process holds it (pid 0)"
	case proc.UnprobedOtherMachine:
		return "on another machine under this host id"
	case proc.UnprobedOtherBoot:
		return "in another boot of a machine not known"
	case proc.UnprobedOtherPIDNS:
		return "in another PID namespace"
	}
	return why
}
