package timeline

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"strings"
	"time"

	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/replay"
)

// esc is every text of the page and the picture: control characters
// escaped visibly (termtext; most are not even allowed in an SVG file),
// then HTML's special characters.
func esc(s string) string { return html.EscapeString(termtext.Escape(s)) }

// svgNS is the SVG namespace: a name, never fetched. Inline SVG in HTML
// needs none; a standalone file does.
const svgNS = "http://www.w3.org/2000/svg"

// WriteSVG writes the bare picture, for embedding in a document.
func WriteSVG(w io.Writer, p *Page) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
	writeSVG(bw, newLayout(p), true)
	return bw.Flush()
}

func writeSVG(w *bufio.Writer, l *layout, standalone bool) {
	h := l.height()
	ns := ""
	if standalone {
		ns = ` xmlns="` + svgNS + `"`
	}
	fmt.Fprintf(w, `<svg%s id="timeline" role="img" aria-labelledby="svgtitle" data-span="%d" data-start="%d" data-x0="%d" data-x1="%d" data-gap="%d" data-namedy="%d" viewBox="0 0 %d %d" width="%d" height="%d" font-family="sans-serif" font-size="13">`+"\n",
		ns, l.end.Sub(l.start).Milliseconds(), l.start.UnixMilli(), plotX0, plotX1, markGap, barH/2+5, width, h, width, h)
	fmt.Fprintf(w, `<title id="svgtitle">Holdings of %s from %s to %s (UTC)</title>`+"\n",
		plural(len(l.lanes), "lock", "locks"), fmtTime(l.start), fmtTime(l.end))
	w.WriteString("<style>.b,.agg,.mk{cursor:pointer}.mk{stroke-width:1.5}.b:focus,.mk:focus,.agg:focus{outline:none;stroke:#000;stroke-width:2}.sel{stroke:#000;stroke-width:3}</style>\n")
	w.WriteString("<defs>")
	// Stale: dark lines across the bar, the other way from the stripes.
	w.WriteString(`<pattern id="stale" width="5" height="5" patternUnits="userSpaceOnUse" patternTransform="rotate(-45)"><rect width="5" height="5" fill="#fff" fill-opacity="0.35"/><rect width="1.5" height="5" fill="#000"/></pattern>`)
	if l.needsStripes() {
		for i, c := range palette {
			fmt.Fprintf(w, `<pattern id="s%d" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="%s"/><rect width="2" height="6" fill="#fff"/></pattern>`, i, c)
		}
	}
	w.WriteString("</defs>\n")
	fmt.Fprintf(w, `<rect x="0" y="0" width="%d" height="%d" fill="#fff"/>`+"\n", width, h)
	writeAxis(w, l)
	writeLanes(w, l)
	writeWaits(w, l)
	if l.aggregate {
		writeAggregated(w, l)
	} else {
		writeBars(w, l, !standalone && len(l.p.Events) > OverviewAbove)
	}
	writeMarkers(w, l)
	writeAnnotations(w, l)
	writeLegend(w, l)
	if !standalone {
		// The page's script draws it around what is selected: a white
		// ring inside a black one shows on any colour.
		w.WriteString(`<g id="selbox" display="none" pointer-events="none" fill="none"><rect stroke="#000" stroke-width="5"/><rect stroke="#fff" stroke-width="2"/></g>` + "\n")
	}
	w.WriteString("</svg>\n")
}

func writeAxis(w *bufio.Writer, l *layout) {
	bottom := l.lanesBottom()
	fmt.Fprintf(w, `<g class="axis" fill="#333" data-bottom="%d">`, bottom)
	fmt.Fprintf(w, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`, plotX0, axisY, plotX1, axisY)
	w.WriteString(`<g class="ticks">`)
	for _, t := range ticks(l.start, l.end, 8) {
		x := l.x(t.t)
		fmt.Fprintf(w, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`, x, axisY, x, bottom)
		fmt.Fprintf(w, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, x, axisY-8, esc(t.label))
	}
	w.WriteString(`</g>`)
	fmt.Fprintf(w, `<text class="day" x="4" y="%d" font-weight="bold">%s UTC</text>`, axisY-8, l.start.UTC().Format("2006-01-02"))
	w.WriteString("</g>\n")
}

// ms is t as the page's script positions it: milliseconds from the
// window's start.
func (l *layout) ms(t time.Time) int64 { return t.Sub(l.start).Milliseconds() }

func writeLanes(w *bufio.Writer, l *layout) {
	for i, name := range l.lanes {
		g := &l.geom[i]
		shade := "#f4f4f4"
		if i%2 == 1 {
			shade = "#fff"
		}
		rows := make([]string, maxAnnRows)
		for r := range rows {
			rows[r] = fmt.Sprint(g.rowY(r))
		}
		nrows := make([]string, g.nameRows)
		for r := range nrows {
			nrows[r] = fmt.Sprint(g.nameRowY(r))
		}
		fmt.Fprintf(w, `<g class="lane" data-lock="%s" data-rows="%s" data-used="%d" data-nrows="%s"><rect x="0" y="%d" width="%d" height="%d" fill="%s"/><text class="lname" x="4" y="%d" font-weight="bold" font-size="%d">%s</text>`,
			esc(name), strings.Join(rows, " "), g.rows, strings.Join(nrows, " "), g.top, width, g.height, shade, g.barY+barH/2+5, labelSize,
			html.EscapeString(fitText(name, labelSize*1.1, plotX0-16, 3)))
		for _, a := range g.waiters {
			y := g.waitRowY(a)
			fmt.Fprintf(w, `<g class="waitrow" data-actor="%s"><line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#ccc"/><text class="wname" x="14" y="%d" font-size="%d" fill="#333">%s</text></g>`,
				esc(a), plotX0, y+waitRowH/2, plotX1, y+waitRowH/2, y+waitRowH/2+4, annSize,
				html.EscapeString(fitText(a, annSize, plotX0-56, 3)+" waits"))
		}
		w.WriteString("</g>\n")
	}
}

// maxTracks bounds the rows a lane's overlapping shared holdings are
// stacked in; more wrap around.
const maxTracks = 4

// sharedTracks gives each shared holding a row within its lane's bar, so
// that readers and semaphore slots held at once are drawn one above the
// other (the first row whose last holding ended before it began), and
// each lane's number of rows.
func sharedTracks(l *layout) (track map[*replay.Holding]int, rows map[string]int) {
	track, rows = map[*replay.Holding]int{}, map[string]int{}
	ends := map[string][]time.Time{}
	for _, h := range l.p.Holdings {
		if !h.Shared {
			continue
		}
		end, _ := l.holdingEnd(h)
		rs := ends[h.Lock]
		t := len(rs)
		for i, e := range rs {
			if !e.After(h.Start()) {
				t = i
				break
			}
		}
		if t == len(rs) {
			if t == maxTracks {
				t = len(track) % maxTracks
			} else {
				rs = append(rs, time.Time{})
			}
		}
		rs[t] = end
		ends[h.Lock], track[h] = rs, t
		rows[h.Lock] = len(rs)
	}
	return track, rows
}

func writeBars(w *bufio.Writer, l *layout, zoomable bool) {
	track, rows := sharedTracks(l)
	for _, h := range l.p.Holdings {
		end, open := l.holdingEnd(h)
		x0, x1 := l.x(h.Start()), l.x(end)
		y, height := l.laneGeom(h.Lock).barY, barH
		cls := "b"
		if h.Shared {
			height = max(barH/rows[h.Lock], 3)
			y += track[h] * height
			cls = "b shared"
		}
		if open {
			cls += " open"
		}
		fmt.Fprintf(w, `<rect class="%s" tabindex="0" data-seq="%d" data-request-id="%s" data-actor="%s" data-t="%d" data-u="%d" x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>`,
			cls, h.Opened.Seq, esc(h.Opened.RequestID), esc(h.Opened.Actor), l.ms(h.Start()), l.ms(end), x0, y, max(x1-x0, 1.5), height, l.fill(h.Opened.Actor))
		for _, s := range l.stale[h] {
			sx0, sx1 := l.x(s.from), l.x(s.to)
			fmt.Fprintf(w, `<rect class="stale" data-seq="%d" data-t="%d" data-u="%d" x="%.1f" y="%d" width="%.1f" height="%d" fill="url(#stale)" stroke="#000" stroke-width="0.5"><title>%s</title></rect>`,
				h.Opened.Seq, l.ms(s.from), l.ms(s.to), sx0, y, max(sx1-sx0, 1), height,
				esc(fmt.Sprintf("stale from %s: %s's TTL (%ds) ran out without a heartbeat", fmtTime(s.from), h.Opened.Actor, h.Opened.TTLSeconds)))
		}
		// A name inside its bar is in the bar's ink; one under it (class
		// below) is dark, with a leader up to the bar. The page's zoom
		// places them again (data-ink: the ink of one under its bar).
		if n, ok := l.names[h]; ok && n.row < 0 {
			fmt.Fprintf(w, `<text class="label" data-seq="%d" data-full="%s" x="%.1f" y="%d" font-size="%d" fill="%s">%s</text>`,
				h.Opened.Seq, esc(h.Opened.Actor), n.x, y+barH/2+5, labelSize, l.ink(h.Opened.Actor), html.EscapeString(n.text))
		} else if ok {
			g := l.laneGeom(h.Lock)
			ny := g.nameRowY(n.row)
			fmt.Fprintf(w, `<line class="nleader" data-seq="%d" x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#555"/><text class="label below" data-seq="%d" data-full="%s" data-ink="%s" x="%.1f" y="%d" font-size="%d" fill="#111">%s</text>`,
				h.Opened.Seq, n.ax, y+barH, n.ax, ny-11, h.Opened.Seq, esc(h.Opened.Actor), l.ink(h.Opened.Actor), n.x, ny, labelSize, html.EscapeString(n.text))
		} else if zoomable && height >= barH {
			// No room at this scale: the page's zoom may find some.
			fmt.Fprintf(w, `<text class="label" display="none" data-seq="%d" data-full="%s" x="%.1f" y="%d" font-size="%d" fill="%s"></text>`,
				h.Opened.Seq, esc(h.Opened.Actor), x0, y+barH/2+5, labelSize, l.ink(h.Opened.Actor))
		}
		if open {
			// Still held at the window's end: an arrow says the bar goes on.
			fmt.Fprintf(w, `<path class="open-end" data-t="%d" transform="translate(%.1f %d)" d="M0 -2l7 %dl-7 %dz" fill="#000"/>`, l.ms(end), x1, y, barH/2+2, barH/2+2)
		}
		w.WriteByte('\n')
	}
}

// writeWaits draws each wait in its waiter's sub-lane, in the waiter's
// colour under a dashed line, from its start to the grant (class waited:
// it ends where the waiter's bar begins) or to giving up (a ring there),
// with how long it lasted beside its end where that is clear.
func writeWaits(w *bufio.Writer, l *layout) {
	ends := map[string][]float64{} // the sub-lane's taken spans: lock, actor
	for _, s := range l.spans {
		k := s.lock + "\x00" + s.actor
		x0, x1 := l.x(s.from), l.x(s.to)
		ends[k] = append(ends[k], x0, x1)
	}
	for _, s := range l.spans {
		g := l.laneGeom(s.lock)
		y := g.waitRowY(s.actor) + (waitRowH-waitBarH)/2
		x0, x1 := l.x(s.from), l.x(s.to)
		cls, title := "wait", fmt.Sprintf("seq %d: %s waited %s and gave up", s.seq, s.actor, s.to.Sub(s.from).Round(time.Millisecond))
		what := fmt.Sprintf("gave up after %s", s.to.Sub(s.from).Round(100*time.Millisecond))
		if s.granted != nil {
			cls, title = "waited", fmt.Sprintf("seq %d: %s waited %s for it, from %s", s.seq, s.actor, s.to.Sub(s.from).Round(time.Millisecond), fmtTime(s.from))
			what = fmt.Sprintf("got it after %s", s.to.Sub(s.from).Round(100*time.Millisecond))
		}
		fmt.Fprintf(w, `<g class="%s" data-seq="%d" data-actor="%s" data-t="%d" data-u="%d"><title>%s</title><rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s" opacity="0.55"/><line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#000" stroke-dasharray="4 3"/></g>`,
			cls, s.seq, esc(s.actor), l.ms(s.from), l.ms(s.to), esc(title), x0, y, max(x1-x0, 1), waitBarH, l.fill(s.actor), x0, y+waitBarH/2, x1, y+waitBarH/2)
		// How long, right of its end, when nothing else of the sub-lane is there.
		lx := x1 + markHalf + 4
		if s.granted != nil {
			lx = x1 + 4
		}
		lw := textWidth(what, annSize)
		clear := lx+lw < float64(width-6)
		sp := ends[s.lock+"\x00"+s.actor]
		for i := 0; clear && i < len(sp); i += 2 {
			if sp[i] != x0 && sp[i] < lx+lw+markHalf+4 && lx-4 < sp[i+1]+markHalf {
				clear = false
			}
		}
		if clear && !l.aggMarkers {
			fmt.Fprintf(w, `<text class="wspan" data-seq="%d" data-t="%d" data-dx="%.0f" x="%.1f" y="%d" font-size="%d" fill="#333">%s</text>`,
				s.seq, l.ms(s.to), lx-x1, lx, y+waitBarH/2+4, annSize, esc(what))
		}
		w.WriteByte('\n')
	}
}

// writeAnnotations draws the callouts in their lanes' rows, each with a
// leader line down to its marker.
func writeAnnotations(w *bufio.Writer, l *layout) {
	for _, a := range l.anns {
		g := &l.geom[a.lane]
		hidden := ""
		row := a.row
		if row < 0 {
			hidden, row = ` display="none"`, 0
		}
		y := g.rowY(row)
		fmt.Fprintf(w, `<g class="ann" data-seq="%d" data-t="%d" data-lane="%d"%s><line class="leader" x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#555"/><text class="callout" data-seq="%d" x="%.1f" y="%d" font-size="%d" font-weight="bold" fill="#000"><title>%s</title>%s</text></g>`+"\n",
			a.seq, l.ms(a.t), a.lane, hidden, a.ax, y+3, a.ax, g.barY-triangleGap+2, a.seq, a.x, y, annSize, html.EscapeString(a.full), html.EscapeString(a.text))
	}
}

// writeAggregated draws each lane's holdings per pixel column: a column
// is painted in the colour of the last holding that covers it, and runs
// of columns alike are merged into one rectangle whose data-count is the
// holdings that start in it (data-seq: the first of them).
func writeAggregated(w *bufio.Writer, l *layout) {
	cols := plotX1 - plotX0
	for i, hs := range l.holdingsByLane() {
		starts := make([]int, cols+1)
		firstStart := make([]*replay.Holding, cols+1)
		rep := make([]*replay.Holding, cols+1)
		for _, h := range hs {
			end, _ := l.holdingEnd(h)
			c0, c1 := int(l.x(h.Start()))-plotX0, int(l.x(end))-plotX0
			starts[c0]++
			if firstStart[c0] == nil {
				firstStart[c0] = h
			}
			for c := c0; c <= c1 && c <= cols; c++ {
				rep[c] = h
			}
		}
		y := l.geom[i].barY
		for c := 0; c <= cols; {
			if rep[c] == nil {
				c++
				continue
			}
			first, n, actor, c0 := rep[c], 0, rep[c].Opened.Actor, c
			var firstSeen *replay.Holding
			for ; c <= cols && rep[c] != nil && rep[c].Opened.Actor == actor; c++ {
				n += starts[c]
				if firstSeen == nil && firstStart[c] != nil {
					firstSeen = firstStart[c]
				}
			}
			if firstSeen != nil && first.Opened.Seq > firstSeen.Opened.Seq {
				first = firstSeen
			}
			fmt.Fprintf(w, `<rect class="agg" tabindex="0" data-seq="%d" data-count="%d" data-actor="%s" x="%d" y="%d" width="%d" height="%d" fill="%s"/>`+"\n",
				first.Opened.Seq, max(n, 1), esc(actor), plotX0+c0, y, c-c0, barH, l.fill(actor))
		}
	}
}

// markerPath is the shape and fill of ev's marker.
func markerPath(ev *replay.Event) (path, fill string) {
	k := markShape[markerKind(ev)]
	if ev.LockLost && markerKind(ev) == mkHBFail {
		return k[0], "#000"
	}
	return k[0], k[1]
}

func markerY(l *layout, ev *replay.Event) int {
	g := l.laneGeom(ev.LockName)
	switch markerKind(ev) {
	case mkStolen:
		return g.barY - 7
	case mkBlocked:
		if _, ok := g.waitRow[ev.Actor]; ok {
			return g.waitRowY(ev.Actor) + waitRowH/2
		}
		return g.barY + barH + 6
	default:
		return g.barY + barH/2
	}
}

func writeMarkers(w *bufio.Writer, l *layout) {
	if l.aggMarkers {
		writeAggregatedMarkers(w, l)
		return
	}
	for _, ev := range l.markers {
		at, x, y := l.x(ev.Time), l.markX[ev.Seq], markerY(l, ev)
		// A pin from the exact instant, under the marker, to a marker
		// pushed aside (the page's zoom makes its own).
		if x-at >= 0.5 {
			fmt.Fprintf(w, `<line class="pin" data-seq="%d" x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#000"/>`, ev.Seq, at, y+markHalf+3, x, y+markHalf-1)
		}
		d, fill := markerPath(ev)
		fmt.Fprintf(w, `<path class="mk mk-%s" tabindex="0" data-seq="%d" data-type="%s" data-lock="%s" data-t="%d" data-y="%d" transform="translate(%.1f %d)" d="%s" fill="%s" stroke="#000"><title>%s</title></path>`+"\n",
			markerKind(ev), ev.Seq, ev.Type, esc(ev.LockName), l.ms(ev.Time), y, x, y, d, fill, esc(markerTitle(ev)))
	}
}

// writeAggregatedMarkers draws one marker per lane, pixel column and kind,
// carrying the first event's seq and how many it stands for.
func writeAggregatedMarkers(w *bufio.Writer, l *layout) {
	type key struct {
		lane, col int
		kind      string
	}
	first := map[key]*replay.Event{}
	count := map[key]int{}
	var order []key
	for _, ev := range l.markers {
		k := key{l.lane[ev.LockName], int(l.x(ev.Time)), markerKind(ev)}
		if first[k] == nil {
			first[k] = ev
			order = append(order, k)
		}
		count[k]++
	}
	for _, k := range order {
		ev := first[k]
		d, fill := markerPath(ev)
		fmt.Fprintf(w, `<path class="mk mk-%s" tabindex="0" data-seq="%d" data-count="%d" data-type="%s" data-lock="%s" transform="translate(%d %d)" d="%s" fill="%s" stroke="#000"/>`+"\n",
			k.kind, ev.Seq, count[k], ev.Type, esc(ev.LockName), k.col, markerY(l, ev), d, fill)
	}
}

func writeLegend(w *bufio.Writer, l *layout) {
	y := l.lanesBottom() + 16
	perRow := (width - 20) / legendCol
	w.WriteString(`<g class="legend">`)
	for i, a := range l.actors {
		x := 10 + (i%perRow)*legendCol
		yy := y + (i/perRow)*legendRow
		fmt.Fprintf(w, `<g class="key" data-actor="%s"><rect x="%d" y="%d" width="24" height="12" fill="%s" stroke="#000" stroke-width="0.5"/><text x="%d" y="%d">%s</text></g>`,
			esc(a), x, yy, l.fill(a), x+30, yy+11, html.EscapeString(fitText(a, 13, legendCol-40, 3)))
	}
	y += ((len(l.actors) + perRow - 1) / perRow) * legendRow
	keys := []struct{ d, fill, text string }{
		{triangle, "#000", "lock stolen"},
		{ring, "#fff", "gave up waiting"},
		{diamond, "#fff", "heartbeat failed"},
		{diamond, "#000", "heartbeat failed, lock lost"},
		{square, "#000", "released with failure"},
		{square, "#fff", "release forced"},
		{"M-4 -7l7 7l-7 7z", "#000", "held at the window's end"},
		{refusedPath, "#000", "action refused"},
	}
	for i, k := range keys {
		x := 10 + (i%perRow)*legendCol
		yy := y + (i/perRow)*legendRow
		fmt.Fprintf(w, `<path transform="translate(%d %d)" d="%s" fill="%s" stroke="#000"/><text x="%d" y="%d">%s</text>`,
			x+8, yy+7, k.d, k.fill, x+20, yy+11, k.text)
	}
	y += ((len(keys) + perRow - 1) / perRow) * legendRow
	fmt.Fprintf(w, `<g class="key-waited"><rect x="10" y="%d" width="24" height="4" fill="#999" opacity="0.6"/><line x1="10" y1="%d" x2="34" y2="%d" stroke="#000" stroke-dasharray="3 2"/><text x="40" y="%d">a wait (its own row per waiter)</text></g>`,
		y+4, y+6, y+6, y+11)
	fmt.Fprintf(w, `<g class="key-stale"><rect x="%d" y="%d" width="24" height="12" fill="url(#stale)" stroke="#000" stroke-width="0.5"/><text x="%d" y="%d">stale from here: the TTL ran out without a heartbeat</text></g>`,
		10+2*legendCol, y, 40+2*legendCol, y+10)
	w.WriteString("</g>\n")
}
