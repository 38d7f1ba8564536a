package timeline

import (
	"bufio"
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/replay"
)

// Text on the picture is placed by its width as estimated here, in ems of
// a common sans-serif (DejaVu Sans, Liberation Sans, Arial), rounded up so
// that a label placed apart from another stays apart however the browser
// draws it; the browser test measures the result.
func textWidth(s string, size float64) float64 {
	w := 0.0
	for _, r := range s {
		switch {
		case isWide(r):
			w += 1.05
		case r == ' ':
			w += 0.34
		case strings.ContainsRune("iljtfrI.,:;'|!()[]`", r):
			w += 0.45
		case strings.ContainsRune("mwMW@%", r):
			w += 1.02
		case r >= 'A' && r <= 'Z':
			w += 0.8
		case r < 0x80:
			w += 0.67
		default:
			w += 0.85
		}
	}
	return w * size
}

func isWide(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hangul, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || r >= 0xFF00 && r <= 0xFFEF
}

// fitText is what of s fits room at size: all of it, or its start and an
// ellipsis when at least min characters fit, else "". Control characters
// are escaped first (termtext) and never cut in two.
func fitText(s string, size, room float64, min int) string {
	if textWidth(termtext.Escape(s), size) <= room {
		return termtext.Escape(s)
	}
	out, used := "", textWidth("…", size)
	for i, p := range escapedRunes(s) {
		if used+textWidth(p, size) > room {
			if i < min {
				return ""
			}
			return out + "…"
		}
		out += p
		used += textWidth(p, size)
	}
	return out + "…"
}

// Vertical geometry of a lane, top to bottom: callout rows (the words of
// steals, refusals, lost locks and failures, and the names that do not
// fit their bars), the gap where a steal's triangle points at the bar, the
// bar, and one sub-lane per actor that waited for the lock.
const (
	annRowH     = 18
	annSize     = 12
	maxAnnRows  = 4
	triangleGap = 16
	waitRowH    = 22
	waitBarH    = 10
	maxWaitRows = 8
	maxNameRows = 2 // rows under a bar for the names that do not fit inside theirs
	lanePad     = 6
	calloutMax  = 560 // the widest callout, in pixels; the rest is in its details
	nameMax     = 220 // the widest name drawn under its bar
)

// laneGeom places one lane.
type laneGeom struct {
	top, rows, nameRows, barY, waitY, height int
	waiters                                  []string       // one sub-lane each, in order of their first wait
	waitRow                                  map[string]int // actor → sub-lane
}

// rowY is the baseline of callout row r (0 is nearest the bar).
func (g *laneGeom) rowY(r int) int { return g.barY - triangleGap - r*annRowH - 4 }

// nameRowY is the baseline of name row r under the bar (0 is nearest).
func (g *laneGeom) nameRowY(r int) int { return g.barY + barH + 17 + r*annRowH }

// waitRowY is the top of the sub-lane of actor's waits.
func (g *laneGeom) waitRowY(actor string) int { return g.waitY + g.waitRow[actor]*waitRowH }

// waitSpan is one wait for a lock: from its start to the grant (a holding
// whose holder waited for it) or to giving up (acquire_blocked).
type waitSpan struct {
	lock, actor string
	from, to    time.Time
	seq         int64 // the event that ended it
	granted     *replay.Holding
	gaveUp      *replay.Event
}

// waitSpans are the window's waits, by start.
func (l *layout) waitSpans() []waitSpan {
	var out []waitSpan
	for h, from := range l.waitFrom {
		out = append(out, waitSpan{lock: h.Lock, actor: h.Opened.Actor, from: from, to: h.Start(), seq: h.Opened.Seq, granted: h})
	}
	for _, ev := range l.markers {
		if markerKind(ev) == mkBlocked {
			out = append(out, waitSpan{lock: ev.LockName, actor: ev.Actor, from: waitedSince(ev), to: ev.Time, seq: ev.Seq, gaveUp: ev})
		}
	}
	slices.SortFunc(out, func(a, b waitSpan) int {
		if c := a.from.Compare(b.from); c != 0 {
			return c
		}
		return int(a.seq - b.seq)
	})
	return out
}

// annotation is a text placed in a lane's callout rows.
type annotation struct {
	lane  int
	seq   int64
	ax    float64
	t     time.Time
	text  string
	full  string
	w, x  float64
	row   int // -1: no room
	actor string
}

// occupied is one row's taken spans, in pixels.
type occupied [][2]float64

func (o occupied) free(a, b float64) bool {
	for _, s := range o {
		if a < s[1] && s[0] < b {
			return false
		}
	}
	return true
}

// placeAnnotations puts each annotation, from the right end of the plot
// to its left, in the lowest callout row of its lane where it overlaps no
// other and crosses no leader line of those placed before (text runs
// right of its marker, so a leader's line down to the bar, left of
// everything placed before it, is crossed only by what is to its left);
// it starts just left of its marker, shifted left at the plot's right end.
// One that fits no row is left out of the picture (its event stays in the
// tables and its marker's details).
func placeAnnotations(anns []*annotation, lanes int) []int {
	rows, used := laneRows(lanes, maxAnnRows), make([]int, lanes)
	slices.SortStableFunc(anns, func(a, b *annotation) int {
		if c := cmp.Compare(b.ax, a.ax); c != 0 {
			return c
		}
		return int(b.seq - a.seq)
	})
	for _, a := range anns {
		rs := rows[a.lane]
		a.x = min(max(a.ax-6, plotX0), float64(width-6)-a.w)
		a.row = -1
		for r := 0; r < maxAnnRows; r++ {
			if take(rs, r, a.x, a.w, a.ax) {
				a.row = r
				used[a.lane] = max(used[a.lane], r+1)
				break
			}
		}
	}
	return used
}

// laneRows are the taken spans of n rows of each of lanes lanes, none yet.
func laneRows(lanes, n int) [][]occupied {
	rows := make([][]occupied, lanes)
	for i := range rows {
		rows[i] = make([]occupied, n)
	}
	return rows
}

// take puts a text [x, x+w] in row r of rs, with its leader at ax down
// through the rows before r, when it overlaps no text of row r and its
// leader crosses none of theirs; it reports whether it did.
func take(rs []occupied, r int, x, w, ax float64) bool {
	ok := rs[r].free(x-5, x+w+5)
	for q := 0; ok && q < r; q++ {
		ok = rs[q].free(ax-3, ax+3)
	}
	if !ok {
		return false
	}
	rs[r] = append(rs[r], [2]float64{x, x + w})
	for q := 0; q < r; q++ {
		rs[q] = append(rs[q], [2]float64{ax - 2, ax + 2})
	}
	return true
}

// calloutText is what a marker says on the picture: who did what, and a
// steal's or forced release's reason.
func calloutText(ev *replay.Event) string {
	switch markerKind(ev) {
	case mkStolen:
		if ev.Note != "" {
			return fmt.Sprintf("%s stole it: %s", ev.Actor, ev.Note)
		}
		return fmt.Sprintf("%s took it over (%s)", ev.Actor, ev.Reason)
	case mkForced:
		s := fmt.Sprintf("%s forced its release", ev.Actor)
		if ev.Note != "" {
			s += ": " + ev.Note
		}
		return s
	case mkHBFail:
		if ev.LockLost {
			return ev.Actor + ": lock lost"
		}
		return fmt.Sprintf("%s: heartbeat failed %d×", ev.Actor, ev.ConsecutiveFailures)
	case mkRefused:
		return fmt.Sprintf("%s's %s refused", ev.Actor, ev.Action)
	case mkFailRel:
		return ev.Actor + " failed" + failureText(ev)
	}
	return ""
}

// barLabel places an actor's name inside its bar [x0, x1], in the first
// stretch clear of the markers on that bar; "" when there is none wide
// enough for the name (or its start and an ellipsis).
func barLabel(actor string, x0, x1 float64, marks []float64) (string, float64) {
	slices.Sort(marks)
	starts := []float64{x0 + labelPad}
	for _, m := range marks {
		starts = append(starts, m+markHalf+3)
	}
	clear := func(a, b float64) bool {
		for _, m := range marks {
			if a < m+markHalf+2 && m-markHalf-2 < b {
				return false
			}
		}
		return true
	}
	need := textWidth(termtext.Escape(actor), labelSize)
	for _, s := range starts {
		if s < x0+labelPad {
			continue
		}
		end := x1 - labelPad
		for _, m := range marks {
			if m-markHalf-3 >= s && m-markHalf-3 < end {
				end = m - markHalf - 3
			}
		}
		// The whole name or none: a cut one goes under the bar whole.
		if end-s >= need && clear(s, s+need) {
			return termtext.Escape(actor), s
		}
	}
	return "", 0
}

// nameBelow is a bar's name placed in the rows under its lane's bar,
// with a leader line up to the bar at ax.
type nameBelow struct {
	h      *replay.Holding
	lane   int
	x0, x1 float64 // the bar
	text   string
	w      float64
}

// placeNamesBelow puts each name, from the left, in the first row under
// its bar where it overlaps no other name and its leader (at the first
// anchor along the bar that works) crosses no name in a row above; one
// that fits nowhere is left out (its holding stays in the tables).
func (l *layout) placeNamesBelow(ns []nameBelow) []int {
	rows, used := laneRows(len(l.lanes), maxNameRows), make([]int, len(l.lanes))
	slices.SortStableFunc(ns, func(a, b nameBelow) int { return cmp.Compare(a.x0, b.x0) })
	for _, n := range ns {
		rs := rows[n.lane]
		placed := false
		for r := 0; r < maxNameRows && !placed; r++ {
			for _, ax := range anchors(n.x0, n.x1) {
				x := min(max(ax-6, plotX0), float64(width-6)-n.w)
				if !take(rs, r, x, n.w, ax) {
					continue
				}
				l.names[n.h] = barName{text: n.text, x: x, row: r, ax: ax}
				used[n.lane] = max(used[n.lane], r+1)
				placed = true
				break
			}
		}
	}
	return used
}

// anchors are where along a bar [x0, x1] a leader may meet it, from its
// left end every 4 pixels.
func anchors(x0, x1 float64) []float64 {
	if x1-x0 < 4 {
		return []float64{(x0 + x1) / 2}
	}
	var out []float64
	for a := x0 + 2; a <= x1-2; a += 4 {
		out = append(out, a)
	}
	return out
}

// markRow names the row of its lane a marker is drawn in (markerY):
// above the bar, on it, or a waiter's sub-lane.
func markRow(ev *replay.Event) string {
	switch markerKind(ev) {
	case mkStolen:
		return "above"
	case mkBlocked:
		return "wait " + ev.Actor
	}
	return "bar"
}

// markGap is the least distance between the centres of two markers drawn
// in one row; closer ones are pushed apart (see nudgeMarkers).
const markGap = 2*markHalf - 1

// nudgeMarkers is where each marker is drawn: at its instant, or, when
// that would overlap the marker before it in the same row of the same
// lane, pushed right just clear of it (a pin then joins it to its exact
// instant on the bar).
func (l *layout) nudgeMarkers() map[int64]float64 {
	out := make(map[int64]float64, len(l.markers))
	type row struct{ lock, row string }
	byRow := map[row][]*replay.Event{}
	for _, ev := range l.markers {
		k := row{ev.LockName, markRow(ev)}
		byRow[k] = append(byRow[k], ev)
	}
	for _, evs := range byRow {
		slices.SortStableFunc(evs, func(a, b *replay.Event) int { return a.Time.Compare(b.Time) })
		last := math.Inf(-1)
		for _, ev := range evs {
			x := max(l.x(ev.Time), last+markGap)
			out[ev.Seq], last = x, x
		}
	}
	return out
}

// markHalf is half a marker's width.
const markHalf = 8

// place lays the lanes out: the waits' sub-lanes, the callouts and the
// names inside bars, then each lane's height from what it holds.
func (l *layout) place() {
	l.geom = make([]laneGeom, len(l.lanes))
	for i := range l.geom {
		l.geom[i].waitRow = map[string]int{}
	}
	l.spans = l.waitSpans()
	for _, s := range l.spans {
		g := &l.geom[l.lane[s.lock]]
		if _, ok := g.waitRow[s.actor]; !ok {
			// Past the last sub-lane, waiters share it.
			g.waitRow[s.actor] = min(len(g.waiters), maxWaitRows-1)
			if len(g.waiters) < maxWaitRows {
				g.waiters = append(g.waiters, s.actor)
			}
		}
	}
	l.names = map[*replay.Holding]barName{}
	if !l.aggMarkers {
		l.markX = l.nudgeMarkers()
	}
	zoomable := len(l.p.Events) > OverviewAbove
	var below []nameBelow
	if !l.aggMarkers {
		for _, ev := range l.markers {
			if text := calloutText(ev); text != "" {
				full := termtext.Escape(text)
				shown := fitText(text, annSize, calloutMax, 3)
				l.anns = append(l.anns, &annotation{lane: l.lane[ev.LockName], seq: ev.Seq, ax: l.x(ev.Time),
					t: ev.Time, text: shown, full: full, w: textWidth(shown, annSize), actor: ev.Actor})
			}
		}
	}
	if !l.aggregate {
		onBars := map[string][]float64{}
		for _, ev := range l.markers {
			if markRow(ev) == "bar" && !l.aggMarkers {
				onBars[ev.LockName] = append(onBars[ev.LockName], l.markX[ev.Seq])
			}
		}
		_, rows := sharedTracks(l)
		for _, h := range l.p.Holdings {
			if rows[h.Lock] > 1 && h.Shared {
				continue // too thin a row for a name
			}
			end, _ := l.holdingEnd(h)
			x0, x1 := l.x(h.Start()), l.x(end)
			var marks []float64
			for _, m := range onBars[h.Lock] {
				if m > x0-markHalf && m < x1+markHalf {
					marks = append(marks, m)
				}
			}
			if text, x := barLabel(h.Opened.Actor, x0, x1, marks); text != "" {
				l.names[h] = barName{text: text, x: x, row: -1}
				continue
			}
			if len(l.p.Holdings) <= 200 {
				// Too short a bar, or too full of markers: the name goes under it.
				shown := fitText(h.Opened.Actor, labelSize, nameMax, 3)
				below = append(below, nameBelow{h: h, lane: l.lane[h.Lock], x0: x0, x1: x1, text: shown, w: textWidth(shown, labelSize)})
			}
		}
	}
	used := placeAnnotations(l.anns, len(l.lanes))
	usedBelow := l.placeNamesBelow(below)
	if zoomable {
		// A page that zooms keeps every row for what a closer look shows.
		for _, a := range l.anns {
			used[a.lane] = maxAnnRows
		}
		if !l.aggregate {
			for i := range usedBelow {
				usedBelow[i] = maxNameRows
			}
		}
	}
	top := lanesY
	for i := range l.geom {
		g := &l.geom[i]
		g.rows = max(used[i], 1)
		g.top = top
		g.barY = top + lanePad + g.rows*annRowH + triangleGap
		g.nameRows = usedBelow[i]
		g.waitY = g.barY + barH + 6 + g.nameRows*annRowH
		g.height = g.waitY + len(g.waiters)*waitRowH + lanePad - top
		top += g.height
	}
}

// OverviewAbove is how many events a page shows without an overview: above
// it, a strip of the whole window's events sits over the picture, and a
// drag across it zooms the picture in on that stretch.
const OverviewAbove = 40

const overviewH = 44

// writeOverview draws the strip: how many events fall in each pixel
// column of the window, on a square-root scale.
func writeOverview(w *bufio.Writer, l *layout) {
	cols := plotX1 - plotX0 + 1
	counts := make([]int, cols)
	most := 1
	for _, ev := range l.p.Events {
		c := int(l.x(ev.Time)) - plotX0
		counts[c]++
		most = max(most, counts[c])
	}
	fmt.Fprintf(w, `<svg id="overview" role="img" aria-label="overview of the window: drag across it to zoom the picture" viewBox="0 0 %d %d" width="%d" height="%d" font-family="sans-serif" font-size="12">`,
		width, overviewH, width, overviewH)
	fmt.Fprintf(w, `<rect x="0" y="0" width="%d" height="%d" fill="#f4f4f4"/><text x="4" y="16" font-weight="bold">overview</text><text x="4" y="32" fill="#555">drag to zoom</text>`, width, overviewH)
	fmt.Fprintf(w, `<rect x="%d" y="2" width="%d" height="%d" fill="#fff" stroke="#999"/>`, plotX0, plotX1-plotX0, overviewH-4)
	w.WriteString(`<path fill="#0072B2" d="`)
	for c, n := range counts {
		if n > 0 {
			h := max(1, int(math.Sqrt(float64(n)/float64(most))*float64(overviewH-8)))
			fmt.Fprintf(w, "M%d %dh1v%dh-1z", plotX0+c, overviewH-4-h, h)
		}
	}
	w.WriteString(`"/>`)
	fmt.Fprintf(w, `<rect id="brush" x="%d" y="1" width="%d" height="%d" fill="#E69F00" fill-opacity="0.3" stroke="#000"/>`, plotX0, plotX1-plotX0, overviewH-2)
	w.WriteString("</svg>\n")
}
