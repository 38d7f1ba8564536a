package timelinecmd

import (
	"bufio"
	"context"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/lockledger/lockledger/cli/eventfmt"
	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/timeline"
)

// Picture formats of timeline.
const (
	formatHTML = "html"
	formatSVG  = "svg"
)

// runTimelinePage draws the window as a page (or its bare SVG): replay's
// holdings, the timeline query's events, and verify's verdict, all read
// in one snapshot.
func runTimelinePage(ctx context.Context, o *timelineOptions, f replay.Filter) error {
	now := time.Now()
	var p *timeline.Page
	err := o.g.ReadInto(ctx, o.out, func(w io.Writer, r *invocation.Reader) (err error) {
		p = &timeline.Page{Generated: now, Command: o.commandLine(), Since: f.Since, Until: f.Until,
			Describe: eventfmt.Details, OSUser: func(ev *replay.Event) string { return eventfmt.OSUserText(&ev.Envelope) },
			HeartbeatsLeftOut: len(f.Types) > 0 && !slices.Contains(f.Types, events.LockHeartbeat)}
		if o.format == formatHTML {
			if p.Verify, err = r.Ledger.Verify(ctx, ledger.InSnapshot(r.Tx)); err != nil {
				return err
			}
		}
		if p.Holdings, err = replay.Holdings(ctx, r.Tx, f); err != nil {
			return err
		}
		err = replay.Scan(ctx, r.Tx, f, func(ev *replay.Event) error {
			p.Events = append(p.Events, ev)
			return nil
		})
		if err != nil {
			return err
		}
		bw := bufio.NewWriterSize(w, 256<<10)
		if o.format == formatHTML {
			err = timeline.WriteHTML(bw, p)
		} else {
			err = timeline.WriteSVG(bw, p)
		}
		if err != nil {
			return err
		}
		return bw.Flush()
	})
	if err != nil {
		return err
	}
	s := timeline.Summarize(p)
	o.g.Log.Info("timeline drawn", "holdings", s.Holdings, "markers", s.Markers, "events", s.Events, "locks", s.Lanes, "aggregated", s.Aggregated)
	return nil
}

// commandLine is the command that makes this page again, for its header.
func (o *timelineOptions) commandLine() string {
	parts := []string{"lockledger timeline"}
	add := func(flag, v string) {
		if v != "" {
			parts = append(parts, flag+" "+shellWord(v))
		}
	}
	add("--lock", o.lock)
	add("--actor", o.actor)
	add("--type", strings.Join(o.types, ","))
	add("--since", o.Since)
	add("--until", o.Until)
	add("--format", o.format)
	return strings.Join(parts, " ")
}

func shellWord(s string) string {
	if strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:,/@+=", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
