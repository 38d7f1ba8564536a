package timelinecmd

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/replay"
)

type whoOptions struct {
	g    *invocation.Globals
	lock string
	at   string
}

var whoListing = invocation.Listing{
	Use:   "who NAME [--at T]",
	Short: "Who held a lock at an instant, from the events alone",
}

func NewWho(g *invocation.Globals) *cobra.Command {
	o := &whoOptions{g: g}
	cmd := whoListing.Of(&cobra.Command{
		Long: `Replay one lock's events up to T (every event with at <= T, in log order)
and print its holder then: held, stale (no heartbeat within the TTL at T)
or free. "dead" cannot be judged after the fact: no event records the
holder's process table, so a dead holder shows as held or stale. The
waiters queued then (acquire --wait, run --wait) follow, next first
(JSON "queue"), each with how long it had waited by T, until its request
acquired or gave up or its place lapsed (15 s after its last renewal: a
waiter whose process died shows until then). "began" says how the
holding began: acquired (after waiting, if it waited), stolen (the
reason and the operator's words) or taken over from a stale, dead or
foreign holder. A lock
held only through another tool's lock file shows as free. T is RFC 3339,
a wall-clock time on this machine's clocks (10:31 today, "2025-03-14
10:31"), a Unix time (@1741948260), or a duration meaning that long ago
(2h, -15m); the default is
now. The output names T in the local zone too. who only reads.`,
		Example: `  lockledger who app-prod --at 2025-03-14T10:31:00Z
  lockledger who app-prod --at 10:31                 # today, local time
  lockledger who app-prod --at "2025-03-14 10:31"
  lockledger who app-prod --at -15m --json | jq .holder.actor`,
		Args: invocation.ExactlyOneLock,
		RunE: invocation.OnLock(&o.lock, o.run),
	})
	cmd.Flags().StringVar(&o.at, "at", "now", "the instant (RFC 3339; local wall-clock 10:31 or \"2025-03-14 10:31\"; or a duration ago: 2h, -15m)")
	return cmd
}

// whoObject is who's --json answer.
type whoObject struct {
	LockName string `json:"lock_name"`
	At       string `json:"at"`
	// AtLocal is At on the clocks where who ran, with their offset, and
	// Zone their zone's name: a wall-clock --at was read in that zone.
	AtLocal      string         `json:"at_local"`
	Zone         string         `json:"zone"`
	State        string         `json:"state"`
	Holder       *events.Record `json:"holder"`
	FencingToken int64          `json:"fencing_token,omitempty"`
	// Began is how the holder's holding began.
	Began      *beganJSON       `json:"began,omitempty"`
	StaleSince string           `json:"stale_since,omitempty"`
	LastEvent  *replay.EventRef `json:"last_event,omitempty"`
	// Mode, Limit and Holders: the shared holders at T (holder is null).
	Mode    string         `json:"mode,omitempty"`
	Limit   int64          `json:"limit,omitempty"`
	Holders []sharedAtJSON `json:"holders,omitempty"`
	// Queue is the waiters queued at T, next first.
	Queue []queuedAtJSON `json:"queue,omitempty"`
}

// queuedAtJSON is one waiter in who's queue, and how long it had waited
// by the instant asked about.
type queuedAtJSON struct {
	invocation.Waiter
	WaitedSeconds float64 `json:"waited_seconds"`
}

// beganJSON is how a holding began: its acquiring event (lock_acquired,
// or lock_stolen with the reason, the operator's note and the holding
// taken over) and how long its acquirer had waited.
type beganJSON struct {
	Seq               int64       `json:"seq"`
	Type              events.Type `json:"type"`
	Reason            string      `json:"reason,omitempty"`
	Note              string      `json:"note,omitempty"`
	PreviousRequestID string      `json:"previous_request_id,omitempty"`
	WaitedSeconds     float64     `json:"waited_seconds,omitempty"`
}

// beganWords say how a holding began by its steal's reason, PREV the
// holding it took over.
var beganWords = map[string]string{
	events.ReasonForcedActive: "stolen from PREV while it was active (forced_active)",
	events.ReasonStaleForced:  "taken over from PREV, which was stale (stale_lock_forced)",
	events.ReasonHolderDead:   "taken over from PREV, whose process had died (holder_dead)",
	events.ReasonForeignLock:  "taken over from another tool's lock file (foreign_lock)",
	events.ReasonSuperseded:   "superseded PREV (superseded)",
	events.ReasonReclaimed:    "reclaimed by its own request from another process (reclaimed)",
}

// beganText says how a holding began, in words.
func beganText(b *beganJSON) string {
	s := "acquired"
	if b.Type != events.LockAcquired {
		s = cmp.Or(beganWords[b.Reason], "stolen from PREV ("+b.Reason+")")
		s = strings.ReplaceAll(s, "PREV", b.PreviousRequestID)
	}
	s += fmt.Sprintf(", seq %d", b.Seq)
	if b.WaitedSeconds > 0 {
		s += ", after waiting " + invocation.ShortDuration(time.Duration(b.WaitedSeconds*float64(time.Second)))
	}
	if b.Note != "" {
		s += ": " + strconv.Quote(b.Note)
	}
	return s
}

func (o *whoOptions) run(ctx context.Context) error {
	at, err := invocation.ParseTime("--at", o.at, time.Now())
	if err != nil {
		return err
	}
	st, err := foldAt(ctx, o.g, at, o.lock)
	if err != nil {
		return err
	}
	obj := whoAt(o.lock, st.Lock(o.lock), at)
	return o.g.Answer(obj, true, func(w io.Writer) { printWho(w, obj, st.Lock(o.lock), at) })
}

func whoAt(name string, lk *replay.Lock, at time.Time) whoObject {
	local := at.Local()
	obj := whoObject{LockName: name, At: events.FormatTime(at), AtLocal: local.Format(time.RFC3339Nano),
		Zone: local.Format("MST"), State: lk.StateAt(at)}
	if lk == nil {
		return obj
	}
	last := lk.Last
	obj.LastEvent = &last
	obj.Mode, obj.Limit, obj.Holders = sharedAt(lk, at)
	for i, q := range lk.QueueAt(at) {
		obj.Queue = append(obj.Queue, queuedAtJSON{invocation.WaiterOf(i+1, q.RequestID, q.Actor, q.PID, q.HostID, q.Since, q.Until, q.Seq),
			at.Sub(q.Since).Seconds()})
	}
	if lk.Held {
		rec := lk.Holder.Record
		obj.Holder, obj.FencingToken = &rec, lk.Holder.Token
		b := lk.Holder.Began
		obj.Began = &beganJSON{Seq: b.Seq, Type: b.Type, Reason: b.Reason, Note: b.Note, PreviousRequestID: b.From, WaitedSeconds: b.Waited}
		if obj.State == events.StateStale {
			obj.StaleSince = events.FormatTime(lk.Holder.StaleSince())
		}
	}
	return obj
}

func printWho(w io.Writer, obj whoObject, lk *replay.Lock, at time.Time) {
	termtext.Fprintf(w, "%s at %s: %s\n", obj.LockName, obj.At, obj.State)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	defer tw.Flush()
	// at on the clocks where who runs, its zone named: a wall-clock --at was read there.
	termtext.Fprintf(tw, "  local time\t%s\n", at.Local().Format("2006-01-02 15:04:05 MST (-07:00)"))
	if lk == nil {
		termtext.Fprintf(tw, "  note\tno event names this lock up to then\n")
		return
	}
	if h := obj.Holder; h != nil {
		invocation.HolderRows(tw, h)
		termtext.Fprintf(tw, "  since\t%s (held %s by then)\n", events.FormatTime(lk.Holder.Created), invocation.ShortDuration(at.Sub(lk.Holder.Created)))
		termtext.Fprintf(tw, "  began\t%s\n", beganText(obj.Began))
		termtext.Fprintf(tw, "  heartbeat\t%s (%s before, ttl %ds)\n", events.FormatTime(lk.Holder.Heartbeat),
			invocation.ShortDuration(at.Sub(lk.Holder.Heartbeat)), h.TTLSeconds)
		if obj.StaleSince != "" {
			termtext.Fprintf(tw, "  stale since\t%s\n", obj.StaleSince)
		}
		termtext.Fprintf(tw, "  fencing token\t%d\n", obj.FencingToken)
	}
	if obj.Mode == events.ModeShared {
		limit := "no limit"
		if obj.Limit > 0 {
			limit = fmt.Sprintf("limit %d", obj.Limit)
		}
		termtext.Fprintf(tw, "  shared by\t%d (%s)\n", len(obj.Holders), limit)
		for _, h := range obj.Holders {
			termtext.Fprintf(tw, "  holder\t%s %s, actor %s, pid %d on %s, since %s, fencing token %d\n", h.State, h.Lock.RequestID,
				h.Lock.Actor, h.Lock.PID, h.Lock.HostID, h.Lock.CreatedAt, h.FencingToken)
		}
	}
	for _, q := range obj.Queue {
		termtext.Fprintf(tw, "  queued %d.\t%s, actor %s, %s, since %s, waited %s by then\n", q.Position, q.RequestID, q.Actor,
			invocation.ProcessText(q.PID, q.HostID), q.Since, invocation.ShortDuration(time.Duration(q.WaitedSeconds*float64(time.Second))))
	}
	l := lk.Last
	termtext.Fprintf(tw, "  last event\tseq %d %s by %s (%s) at %s\n", l.Seq, l.Type, l.Actor, l.RequestID, l.At)
}
