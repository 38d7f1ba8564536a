package timeline

import (
	"bufio"
	"cmp"
	_ "embed"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/verify"
)

// WriteHTML writes the page: a header that makes it evidence (ledger,
// seq range, head hash, verify's result), the picture, a details panel,
// and the same events as text tables. Everything is inline.
func WriteHTML(w io.Writer, p *Page) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	l := newLayout(p)
	bw.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n")
	// Nothing may be fetched: no network, no inline frames, no forms.
	bw.WriteString(`<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">` + "\n")
	fmt.Fprintf(bw, "<title>lockledger timeline: %s</title>\n", esc(filterText(p)))
	bw.WriteString("<style>" + strings.TrimSpace(pageCSS) + "</style></head><body>\n")
	writeHeader(bw, p, l)
	bw.WriteString(`<div id="picture">` + "\n")
	if len(p.Events) > OverviewAbove {
		writeOverview(bw, l)
	}
	writeSVG(bw, l, false)
	bw.WriteString("</div>\n")
	bw.WriteString(`<aside id="details" aria-live="polite"><h2>Details</h2><p id="details-hint">Point at or click a bar or a marker (or tab to it) to see its event here; page.html#seq=N opens with event N shown.</p><dl id="details-body"></dl></aside>` + "\n")
	writeHoldingsTable(bw, p, l)
	writeEventsTable(bw, p)
	bw.WriteString("<script>" + strings.TrimSpace(pageJS) + "\n" + strings.TrimSpace(zoomJS) + "</script>\n</body></html>\n")
	return bw.Flush()
}

func writeHeader(w *bufio.Writer, p *Page, l *layout) {
	w.WriteString("<header><h1>lockledger timeline</h1><dl class=\"facts\">\n")
	fact := func(k, v string) { fmt.Fprintf(w, "<dt>%s</dt><dd>%s</dd>\n", k, v) }
	fact("Command", "<code>"+esc(filterText(p))+"</code>")
	fact("Generated", esc(fmtTime(p.Generated))+" (UTC)")
	fact("Window", esc(fmtTime(l.start))+" to "+esc(fmtTime(l.end))+" (UTC)")
	shown := plural(len(p.Events), "event", "events")
	if n := len(p.Events); n > 0 {
		shown += fmt.Sprintf(" (seq %d-%d)", p.Events[0].Seq, p.Events[n-1].Seq)
	}
	fact("Shown", esc(fmt.Sprintf("%s, %s on %s", shown, plural(len(p.Holdings), "holding", "holdings"), plural(len(l.lanes), "lock", "locks"))))
	if r := p.Verify; r != nil {
		if r.LedgerID != "" {
			fact("Ledger id", "<code>"+esc(r.LedgerID)+"</code>")
		}
		if r.Events > 0 {
			fact("Ledger", esc(fmt.Sprintf("%s, seq %d-%d", plural(int(r.Events), "event", "events"), r.FirstSeq, r.LastSeq)))
			fact("Head hash", "<code>"+esc(r.HeadHash)+"</code>")
		}
		fact("Verify", verifyText(r))
		fact("Checkpoint", checkpointText(r))
	} else {
		fact("Verify", "not run")
	}
	w.WriteString("</dl>\n")
	if l.aggregate || l.aggMarkers {
		fmt.Fprintf(w, `<p class="note" id="aggregated">This window holds %s and %s: above %d, each lane is drawn per pixel column (a bar's data-count says how many it stands for, its details are the first one's). Narrow the window (--since, --until, --lock) to see each one.</p>`+"\n",
			plural(len(p.Holdings), "holding", "holdings"), plural(len(l.markers), "marker", "markers"), AggregateAbove)
	}
	w.WriteString("</header>\n")
}

// verifyText is verify's verdict at generation time, in words.
func verifyText(r *verify.Report) string {
	if r.OK {
		return `<span class="ok">OK</span>: the chain, schemas, locks table and lock files hold`
	}
	s := fmt.Sprintf(`<span class="bad">FAILED</span> (%s)`, plural(r.ProblemCount, "problem", "problems"))
	if fb := r.FirstBad; fb != nil {
		s += esc(fmt.Sprintf(": first %s at seq %d: %s", fb.Kind, fb.Seq, fb.Detail))
	}
	return s + "; run lockledger verify"
}

// checkpointText names the largest checkpoint verify met and its result.
func checkpointText(r *verify.Report) string {
	if len(r.Checkpoints) == 0 {
		return "none stored; " + esc(r.Trust)
	}
	c := slices.MaxFunc(r.Checkpoints, func(a, b *verify.CheckpointResult) int { return cmp.Compare(a.Size, b.Size) })
	s := fmt.Sprintf("%s: %d events", c.Source, c.Size)
	if !c.Time.IsZero() {
		s += ", signed " + fmtTime(c.Time)
	}
	s += ", " + c.Result
	if c.Result == "not checked" {
		s += " (lockledger verify --verifier-key KEY checks its signature)"
	}
	return esc(s)
}

func writeHoldingsTable(w *bufio.Writer, p *Page, l *layout) {
	fmt.Fprintf(w, "<section><h2>Holdings (%d)</h2>\n", len(p.Holdings))
	w.WriteString(`<p>A holding's opening event (same seq) is in the events table below.</p>` + "\n")
	w.WriteString(`<table id="holdings"><thead><tr><th>Seq<th>Lock<th>Actor<th>Request<th>From (UTC)<th>To (UTC)<th>Ended by</tr></thead><tbody>` + "\n")
	for i, h := range p.Holdings {
		if i == TableLimit {
			break
		}
		o := h.Opened
		end, ended := "held at the window's end", "-"
		if h.Ended != nil {
			if _, open := l.holdingEnd(h); !open {
				end = fmtTime(h.Ended.Time)
				ended = fmt.Sprintf("seq %d %s by %s", h.Ended.Seq, h.Ended.Type, h.Ended.Actor)
			}
		}
		fmt.Fprintf(w, "<tr id=h%d><td>%d<td>%s<td>%s<td>%s<td>%s<td>%s<td>%s\n",
			o.Seq, o.Seq, esc(o.LockName), esc(o.Actor), esc(o.RequestID), fmtTime(o.Time), esc(end), esc(ended))
	}
	w.WriteString("</tbody></table>\n")
	tableCut(w, len(p.Holdings), "holdings")
	w.WriteString("</section>\n")
}

// earlier is the opening events of holdings drawn that the query did not
// select (begun before the window, or outside --type): their own table,
// so that every bar's event is on the page.
func earlier(p *Page) []*replay.Event {
	in := make(map[int64]bool, len(p.Events))
	for _, ev := range p.Events {
		in[ev.Seq] = true
	}
	var out []*replay.Event
	for i, h := range p.Holdings {
		if i < TableLimit && !in[h.Opened.Seq] {
			out = append(out, h.Opened)
		}
	}
	return out
}

func writeEventsTable(w *bufio.Writer, p *Page) {
	if ev := earlier(p); len(ev) > 0 {
		fmt.Fprintf(w, "<section><h2>Opening events of holdings drawn, outside the selection (%d)</h2>\n", len(ev))
		writeEventRows(w, p, "earlier", ev)
		w.WriteString("</section>\n")
	}
	fmt.Fprintf(w, "<section><h2>Events (%d)</h2>\n", len(p.Events))
	writeEventRows(w, p, "events", p.Events)
	tableCut(w, len(p.Events), "events")
	w.WriteString("</section>\n")
}

func writeEventRows(w *bufio.Writer, p *Page, id string, evs []*replay.Event) {
	fmt.Fprintf(w, `<table id="%s"><thead><tr><th>Seq<th>Time (UTC)<th>Event<th>Lock<th>Actor<th>OS user<th>PID@host<th>Request<th>Details<th>Hash</tr></thead><tbody>`+"\n", id)
	for i, ev := range evs {
		if i == TableLimit {
			break
		}
		lock := ev.LockName
		if ev.Type.LedgerWide() {
			lock = "(ledger)"
		}
		osUser := "-"
		if p.OSUser != nil {
			osUser = p.OSUser(ev)
		}
		fmt.Fprintf(w, "<tr id=e%d><td>%d<td>%s<td>%s<td>%s<td>%s<td>%s<td>%d@%s<td>%s<td>%s<td>%s\n",
			ev.Seq, ev.Seq, fmtTime(ev.Time), ev.Type, esc(lock), esc(ev.Actor), esc(osUser), ev.PID, esc(ev.HostID),
			esc(ev.RequestID), esc(describe(p, ev)), esc(ev.Hash))
	}
	w.WriteString("</tbody></table>\n")
}

func tableCut(w *bufio.Writer, n int, what string) {
	if n > TableLimit {
		fmt.Fprintf(w, `<p class="note">The first %d of %s %s are listed; lockledger timeline --format csv lists them all.</p>`+"\n",
			TableLimit, strconv.Itoa(n), what)
	}
}

func describe(p *Page, ev *replay.Event) string {
	if p.Describe == nil {
		return ""
	}
	return p.Describe(ev)
}

//go:embed page.css
var pageCSS string

// pageJS fills the details panel from the tables' rows, so that each
// event's text is on the page once. A link to page.html#seq=N opens with
// that bar or marker shown.
//
//go:embed page.js
var pageJS string

// zoomJS zooms the picture on the stretch dragged across the overview
// (a double click shows the whole window again): each mark moves to its
// time (data-t, data-u: milliseconds from the window's start), markers
// that would overlap in a row are pushed apart and pinned to their
// instants, the axis is ticked again, and the words are placed again as
// the server placed them, measured this time: callouts in their lane's
// rows from the right, names inside their bars clear of markers or else
// in the rows under them; what finds no room is hidden.
//
//go:embed zoom.js
var zoomJS string
