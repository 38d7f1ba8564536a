package timelinecmd

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/cli/eventfmt"
	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/replay"
)

type timelineOptions struct {
	g      *invocation.Globals
	lock   string
	actor  string
	types  []string
	format string
	out    string
	wide   bool
	invocation.TimeRange
}

var timelineListing = invocation.Listing{
	Use:   "timeline [--lock L] [--actor A] [--type T] [--since T] [--until T] [--format table|json|jsonl|csv|html|svg] [--wide] [-o FILE]",
	Short: "Print events, oldest first, for a postmortem or an audit",
}

func NewTimeline(g *invocation.Globals) *cobra.Command {
	o := &timelineOptions{g: g}
	cmd := timelineListing.Of(&cobra.Command{
		Long: `Print the events that match every filter given, in log order (seq),
oldest first. Times are RFC 3339 or a duration meaning that long ago
(--since 2h); both bounds are inclusive. --type is repeatable or a comma
list of: lock_acquired, lock_heartbeat, lock_stolen, lock_released,
heartbeat_failed, acquire_blocked, action_refused (a refused release,
steal or heartbeat), lock_projected (what project changed),
job_processes (a job's processes still running after it), and the reads
of the whole log: ledger_exported, ledger_verified and ledger_projected
(who exported, verified or projected the ledger, with what result).
Those name no lock: LOCK reads (ledger), and --lock leaves them out.

ACTOR is who the writer said it was (--actor, LOCKLEDGER_ACTOR, USER, else
the OS user's name);
OS USER is who the kernel says ran the writing process: its user id and,
in parentheses, that user's name ("-" for events written before
lockledger recorded them; in the body, uid and user).

Formats: table (aligned, for a postmortem document; coloured on a terminal
unless NO_COLOR is set; it fits 120 columns: request and host ids are
shortened, as req_… and the id's last six characters, long lock names,
actors and users cut with …, and DETAILS wrapped onto indented lines;
--wide prints every field whole, one line per event), json (one array), jsonl (one event per line:
the hashed body's fields plus prev_hash and hash), csv (uid and user are
its last columns). --json means --format json (jsonl with --format
jsonl).

html draws the same window as one self-contained page (nothing fetched:
inline CSS, SVG and script) for a postmortem: a lane per lock, a bar per
holding as replay folds the log (from the acquisition or steal to the
release or steal that ended it; one still held is drawn to the window's
end and marked), coloured by actor (eight colours before any repeats,
striped) and labelled with the actor where it fits, shaded from where its
TTL ran out without a heartbeat (stale; not judged when --type leaves
lock_heartbeat out), with a dashed span under the lane for a wait that
ended in it (from the first acquire_blocked of its request, or of its actor
on that lock, before it), and markers for steals, blocked acquires, failed
heartbeats, failed releases and refused actions; pointing at one shows its
event and rings it. The header gives the ledger id, its seq range and head hash
and verify's result when the page was made (it is not recorded as a
ledger_verified event). The bars begin with the fold of the log from seq
1, so a holding begun before --since is drawn too; --actor and --type
select holdings by their opening event. Text tables of the holdings and
the events follow the picture. svg writes the picture alone. -o FILE
writes to FILE (mode 0600) instead of stdout: a new file beside it,
renamed into place once complete; FILE may not be inside the root, a
symlink, or anything but a regular file (exit 2, nothing written).
timeline only reads: it takes no lock.`,
		Example: `  lockledger timeline --lock app-prod --since 2025-03-14T10:00:00Z --until 2025-03-14T11:00:00Z
  lockledger timeline --type lock_stolen,acquire_blocked --since 24h
  lockledger timeline --actor alice --format csv > alice.csv
  lockledger timeline --lock app-prod --since 2025-03-14T10:00:00Z --format html -o app-prod.html`,
		Args: invocation.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := eventfmt.JSONFormat(cmd, o.g.JSON, &o.format); err != nil {
				return err
			}
			return runTimeline(cmd.Context(), o)
		},
	})
	fl := cmd.Flags()
	fl.StringVar(&o.lock, "lock", "", "only this lock")
	fl.StringVar(&o.actor, "actor", "", "only events by this actor")
	fl.StringArrayVar(&o.types, "type", nil, "only these event types (repeatable, or comma-separated)")
	fl.StringVar(&o.Since, "since", "", "from this time on (RFC 3339, or a duration ago: 2h)")
	fl.StringVar(&o.Until, "until", "", "up to this time (RFC 3339, or a duration ago)")
	fl.StringVar(&o.format, "format", eventfmt.FormatTable, "table, json, jsonl, csv, html or svg")
	fl.BoolVar(&o.wide, "wide", false, "table: every id and field whole, one line per event (wider than 120 columns)")
	fl.StringVarP(&o.out, "output", "o", "", "html, svg: write to FILE (mode 0600, renamed into place when complete) instead of stdout")
	return cmd
}

func (o *timelineOptions) filter(now time.Time) (replay.Filter, error) {
	f := replay.Filter{Lock: o.lock, Actor: o.actor}
	if o.lock != "" {
		if err := events.ValidateLockName(o.lock); err != nil {
			return f, err
		}
	}
	for _, list := range o.types {
		for _, t := range strings.Split(list, ",") {
			t = strings.TrimSpace(t)
			if !events.Type(t).Valid() {
				return f, events.Invalid("--type", t, "must be one of "+typeList())
			}
			f.Types = append(f.Types, events.Type(t))
		}
	}
	var err error
	f.Since, f.Until, err = o.TimeRange.Parse(now)
	return f, err
}

// typeList names every event type, comma-separated.
func typeList() string {
	names := make([]string, len(events.Types))
	for i, t := range events.Types {
		names[i] = string(t)
	}
	return strings.Join(names, ", ")
}

func runTimeline(ctx context.Context, o *timelineOptions) error {
	f, err := o.filter(time.Now())
	if err != nil {
		return err
	}
	switch o.format {
	case eventfmt.FormatTable, eventfmt.FormatJSON, eventfmt.FormatJSONL, eventfmt.FormatCSV, formatHTML, formatSVG:
	default:
		return events.Invalid("--format", o.format, "must be table, json, jsonl, csv, html or svg")
	}
	switch {
	case o.format == formatHTML || o.format == formatSVG:
		return runTimelinePage(ctx, o, f)
	case o.out != "":
		return &invocation.UsageError{Err: fmt.Errorf("timeline: -o is for --format html or svg; redirect the other formats")}
	}
	return printEvents(ctx, o.g, f, o.format, !o.wide)
}

// printEvents streams the events f selects in format; a narrow table
// fits 120 columns.
func printEvents(ctx context.Context, g *invocation.Globals, f replay.Filter, format string, narrow bool) error {
	w := g.IO.Out
	if format == eventfmt.FormatJSON || format == eventfmt.FormatJSONL {
		w = invocation.JSONOut(w)
	}
	out := bufio.NewWriterSize(w, 64<<10)
	var sink eventfmt.EventSink = newNarrowSink(out, invocation.ColorOK(g.IO.Out))
	if !narrow || format != eventfmt.FormatTable {
		var err error
		if sink, err = eventfmt.NewEventSink(format, out, invocation.ColorOK(g.IO.Out)); err != nil {
			return err
		}
	}
	return g.Reading(ctx, func(r *invocation.Reader) error {
		r.NoteArchived(ctx)
		n := 0
		err := replay.Scan(ctx, r.Tx, f, func(ev *replay.Event) error {
			n++
			return sink.Event(ev)
		})
		err = cmp.Or(err, sink.Close(), out.Flush())
		if err == nil && n == 0 {
			g.Log.Info("no events match")
		}
		return err
	})
}
