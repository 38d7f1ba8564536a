// Package timeline draws a ledger's holdings and notable events as a
// picture for a postmortem: one self-contained HTML page (inline CSS, SVG
// and script, nothing fetched) or the bare SVG.
//
// It draws what it is given: the holdings as replay folds them and the
// events a timeline query selected. It computes no state of its own.
package timeline

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/verify"
)

// AggregateAbove is how many holdings (or markers) a page draws one by one;
// above it, each lane shows them per pixel column, so that the page stays
// small and quick to open whatever the window.
const AggregateAbove = 5000

// TableLimit bounds the rows of each text table.
const TableLimit = 20000

// Page is what a timeline page shows.
type Page struct {
	// Generated is when the page was made; Command how (shown as is).
	Generated time.Time
	Command   string
	// Since and Until are the window asked for; zero bounds are taken from
	// what is drawn.
	Since, Until time.Time
	// Verify is verify's report of the ledger at generation time (nil: not
	// checked).
	Verify *verify.Report
	// Holdings are replay's, by opening seq; Events the timeline query's,
	// in seq order.
	Holdings []*replay.Holding
	Events   []*replay.Event
	// Describe says in a few words what an event records (the timeline
	// table's DETAILS); OSUser who the kernel says wrote it.
	Describe func(*replay.Event) string
	OSUser   func(*replay.Event) string
	// HeartbeatsLeftOut says the query left lock_heartbeat events out
	// (--type without it): no holding is then shaded as stale, since its
	// heartbeats are not known.
	HeartbeatsLeftOut bool
}

// Okabe and Ito's palette with its grey, which people with any common
// colour-blindness tell apart: eight actors get eight colours (black is
// kept for the markers). The first six are of six hue families (hues at
// least 25° apart, and the grey); orange and sky blue, last, are each
// near one of them (vermillion and yellow; blue), so that actors of one
// lane get them only when no other is left (see assignColours).
var palette = []string{"#D55E00", "#0072B2", "#009E73", "#F0E442", "#CC79A7", "#999999", "#E69F00", "#56B4E9"}

// labelInk is the colour of an actor's name on a bar of palette[i]: white
// on the two dark ones, black on the rest.
var labelInk = []string{"#000", "#fff", "#fff", "#000", "#000", "#000", "#000", "#000"}

// hueClash says palette[i] and palette[j] are of one hue family (hues
// less than 25° apart, or both greys): orange with vermillion and with
// yellow, sky blue with blue.
func hueClash(i, j int) bool {
	return i == j || slices.Contains([][2]int{{0, 6}, {1, 7}, {3, 6}}, [2]int{min(i, j), max(i, j)})
}

// assignColours gives each actor a palette slot (the ninth on wrap
// around, striped: see fill). Actors that share a lane (held, waited or
// were refused on one lock) are coloured first, most lane-mates first,
// each the first colour unused so far of a hue family none of its
// lane-mates has; failing that, the first unused one.
func assignColours(actors []string, locks map[string][]string) map[string]int {
	on := map[string][]string{} // lock → its actors
	for _, a := range actors {
		for _, lk := range locks[a] {
			on[lk] = append(on[lk], a)
		}
	}
	mates := func(a string) map[string]bool {
		m := map[string]bool{}
		for _, lk := range locks[a] {
			for _, b := range on[lk] {
				if b != a {
					m[b] = true
				}
			}
		}
		return m
	}
	order := slices.Clone(actors)
	n := map[string]int{}
	for _, a := range actors {
		n[a] = len(mates(a))
	}
	slices.SortStableFunc(order, func(a, b string) int { return n[b] - n[a] })
	color := make(map[string]int, len(actors))
	used := make([]bool, len(palette))
	for k, a := range order {
		if k >= len(palette) {
			color[a] = k
			continue
		}
		ms, pick := mates(a), -1
		for i := range palette {
			if used[i] {
				continue
			}
			clash := false
			for b := range ms {
				if c, ok := color[b]; ok && c < len(palette) && hueClash(i, c) {
					clash = true
				}
			}
			if !clash {
				pick = i
				break
			}
		}
		if pick < 0 {
			pick = slices.Index(used, false)
		}
		color[a], used[pick] = pick, true
	}
	return color
}

// Geometry of the picture, in SVG user units (pixels at 100%).
const (
	width     = 1340
	plotX0    = 190
	plotX1    = 1320
	axisY     = 30
	lanesY    = 44
	barH      = 26
	legendRow = 24
	legendCol = 220
)

// marker kinds: the events drawn on a lane besides the bars.
const (
	mkStolen  = "stolen"
	mkBlocked = "blocked"
	mkHBFail  = "hbfail"
	mkFailRel = "failrel"
	mkRefused = "refused"
	mkForced  = "forced" // a release forced by someone other than the holder
)

// Marker shapes, centred on (0,0): shape, not colour, tells the kinds apart.
const (
	triangle    = "M-7 -7h14l-7 10z" // pointing down onto the bar
	ring        = "M-5 0a5 5 0 1 0 10 0a5 5 0 1 0 -10 0z"
	diamond     = "M0 -7l6 7l-6 7l-6 -7z"
	square      = "M-5 -5h10v10h-10z"
	refusedPath = "M-6 -4l2 -2l4 4l4 -4l2 2l-4 4l4 4l-2 2l-4 -4l-4 4l-2 -2l4 -4z" // a cross
)

// markShape is each kind's shape and fill; a failed heartbeat's diamond
// is filled when the lock was lost (markerPath).
var markShape = map[string][2]string{
	mkStolen: {triangle, "#000"}, mkBlocked: {ring, "#fff"}, mkHBFail: {diamond, "#fff"},
	mkFailRel: {square, "#000"}, mkForced: {square, "#fff"}, mkRefused: {refusedPath, "#000"},
}

// markerKind is the kind of marker ev gets, "" for none.
func markerKind(ev *replay.Event) string {
	switch ev.Type {
	case events.LockStolen:
		return mkStolen
	case events.AcquireBlocked:
		if ev.Until != "" {
			return "" // a waiter joined the queue: its wait goes on
		}
		return mkBlocked
	case events.HeartbeatFailed:
		return mkHBFail
	case events.ActionRefused:
		return mkRefused
	case events.LockReleased:
		if ev.Forced {
			return mkForced
		}
		if ev.Result == events.ResultFailure {
			return mkFailRel
		}
	}
	return ""
}

// layout is everything placed: lanes, the time scale, actors' colours.
type layout struct {
	p          *Page
	start, end time.Time
	lanes      []string
	lane       map[string]int
	actors     []string
	color      map[string]int
	markers    []*replay.Event
	aggregate  bool // holdings drawn per pixel column
	aggMarkers bool // markers drawn per pixel column
	// waitFrom is when the holder of a holding began to wait for it (only
	// holdings that waited); stale the spans in which a holding's TTL had
	// run out without a heartbeat.
	waitFrom map[*replay.Holding]time.Time
	stale    map[*replay.Holding][]span
	// geom places each lane; spans are the waits drawn in its sub-lanes,
	// anns the words in its callout rows, names the actors' names drawn
	// inside their bars (text and x, by holding).
	geom  []laneGeom
	spans []waitSpan
	anns  []*annotation
	names map[*replay.Holding]barName
	// markX is where each marker is drawn, by seq (nudgeMarkers).
	markX map[int64]float64
}

// barName is an actor's name drawn inside its bar (row -1) or in a row
// under it, joined to it at ax.
type barName struct {
	text  string
	x, ax float64
	row   int
}

func newLayout(p *Page) *layout {
	l := &layout{p: p, lane: map[string]int{}, color: map[string]int{}}
	addLane := func(name string) {
		if _, ok := l.lane[name]; !ok {
			l.lane[name] = len(l.lanes)
			l.lanes = append(l.lanes, name)
		}
	}
	var lo, hi time.Time
	see := func(t time.Time) {
		if lo.IsZero() || t.Before(lo) {
			lo = t
		}
		if hi.IsZero() || t.After(hi) {
			hi = t
		}
	}
	locks := map[string][]string{} // actor → the locks it acted on
	addActor := func(a, lock string) {
		if _, ok := l.color[a]; !ok {
			l.color[a] = len(l.actors)
			l.actors = append(l.actors, a)
		}
		if lock != "" && !slices.Contains(locks[a], lock) {
			locks[a] = append(locks[a], lock)
		}
	}
	for _, h := range p.Holdings {
		addLane(h.Lock)
		addActor(h.Opened.Actor, h.Lock)
		see(h.Opened.Time)
		if h.Ended != nil {
			see(h.Ended.Time)
		}
	}
	// Every actor of the window (who waited, was refused or only
	// recorded) has a colour and a legend entry too, after the holders.
	for _, ev := range p.Events {
		lock := ev.LockName
		if ev.Type.LedgerWide() {
			lock = ""
		}
		addActor(ev.Actor, lock)
	}
	l.color = assignColours(l.actors, locks)
	for _, ev := range p.Events {
		see(ev.Time)
		if !ev.Type.LedgerWide() && markerKind(ev) != "" {
			addLane(ev.LockName)
			l.markers = append(l.markers, ev)
			if ev.Type == events.AcquireBlocked && ev.WaitedSeconds > 0 {
				see(waitedSince(ev))
			}
		}
	}
	l.waitFrom = waits(p)
	for _, from := range l.waitFrom {
		see(from)
	}
	slices.Sort(l.lanes)
	for i, n := range l.lanes {
		l.lane[n] = i
	}
	l.start, l.end = p.Since, p.Until
	if lo.IsZero() {
		lo, hi = p.Generated, p.Generated
	}
	// Without a bound asked for, a margin keeps the first and last
	// marks off the plot's edges.
	pad := max(hi.Sub(lo)/50, 100*time.Millisecond)
	if l.start.IsZero() {
		l.start = lo.Add(-pad)
	}
	if l.end.IsZero() {
		l.end = hi.Add(pad)
	}
	if !l.end.After(l.start) {
		l.end = l.start.Add(time.Second)
	}
	l.aggregate = len(p.Holdings) > AggregateAbove
	l.aggMarkers = len(l.markers) > AggregateAbove
	if !l.aggregate && !p.HeartbeatsLeftOut {
		l.stale = staleSpans(l)
	}
	l.place()
	return l
}

// x is t's position on the plot, clamped to it.
func (l *layout) x(t time.Time) float64 {
	f := float64(t.Sub(l.start)) / float64(l.end.Sub(l.start))
	return plotX0 + min(max(f, 0), 1)*(plotX1-plotX0)
}

func (l *layout) laneGeom(name string) *laneGeom { return &l.geom[l.lane[name]] }

func (l *layout) legendRows() int {
	perRow := (width - 20) / legendCol
	return (len(l.actors)+perRow-1)/perRow + 3 // + the markers' two rows, the wait's and the stale's
}

// lanesBottom is where the last lane ends.
func (l *layout) lanesBottom() int {
	if n := len(l.geom); n > 0 {
		return l.geom[n-1].top + l.geom[n-1].height
	}
	return lanesY + 40
}

func (l *layout) height() int {
	return l.lanesBottom() + 16 + l.legendRows()*legendRow + 8
}

// fill is the paint of actor's bars: a palette colour, striped for the
// second round of actors (the ninth on), the colours again after that.
func (l *layout) fill(actor string) string {
	i := l.color[actor]
	if (i/len(palette))%2 == 1 {
		return fmt.Sprintf("url(#s%d)", i%len(palette))
	}
	return palette[i%len(palette)]
}

// ink is the colour of a label on actor's bars.
func (l *layout) ink(actor string) string { return labelInk[l.color[actor]%len(palette)] }

// needsStripes: more actors than colours, so the second round is striped.
func (l *layout) needsStripes() bool { return len(l.actors) > len(palette) }

func fmtTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// holdingEnd is where a holding's bar ends, and whether it was still held
// at the window's end.
func (l *layout) holdingEnd(h *replay.Holding) (time.Time, bool) {
	if h.Ended == nil || h.Ended.Time.After(l.end) {
		return l.end, true
	}
	return h.Ended.Time, false
}

// markerTitle names a marker in words (its tooltip and accessible name).
func markerTitle(ev *replay.Event) string {
	switch markerKind(ev) {
	case mkStolen:
		return fmt.Sprintf("seq %d: stolen by %s, reason %s", ev.Seq, ev.Actor, ev.Reason)
	case mkBlocked:
		return fmt.Sprintf("seq %d: %s waited %.1fs and gave up (%s)", ev.Seq, ev.Actor, ev.WaitedSeconds, ev.State)
	case mkHBFail:
		lost := "lock not lost"
		if ev.LockLost {
			lost = "LOCK LOST"
		}
		return fmt.Sprintf("seq %d: heartbeat failed %d times, %s", ev.Seq, ev.ConsecutiveFailures, lost)
	case mkRefused:
		s := fmt.Sprintf("seq %d: %s refused to %s", ev.Seq, ev.Action, ev.Actor)
		if ev.State != "" {
			s += " (" + ev.State + ")"
		}
		return s
	case mkFailRel:
		return fmt.Sprintf("seq %d: released with failure", ev.Seq) + failureText(ev)
	}
	return ""
}

// failureText is where a failed release failed, and its exit code.
func failureText(ev *replay.Event) string {
	s := ""
	if ev.FailureStep != "" {
		s += " at " + ev.FailureStep
	}
	if ev.ExitCode != nil {
		s += fmt.Sprintf(", exit %d", *ev.ExitCode)
	}
	return s
}

// Summary counts what is drawn, for a caller's message.
type Summary struct {
	Holdings, Markers, Events, Lanes int
	Aggregated                       bool
}

// Summarize is what a page of p draws.
func Summarize(p *Page) Summary {
	l := newLayout(p)
	return Summary{Holdings: len(p.Holdings), Markers: len(l.markers), Events: len(p.Events), Lanes: len(l.lanes),
		Aggregated: l.aggregate || l.aggMarkers}
}

// holdingsByLane groups the holdings per lane, by start.
func (l *layout) holdingsByLane() [][]*replay.Holding {
	out := make([][]*replay.Holding, len(l.lanes))
	for _, h := range l.p.Holdings {
		i := l.lane[h.Lock]
		out[i] = append(out[i], h)
	}
	for _, hs := range out {
		slices.SortStableFunc(hs, func(a, b *replay.Holding) int { return a.Start().Compare(b.Start()) })
	}
	return out
}

func filterText(p *Page) string {
	if strings.TrimSpace(p.Command) == "" {
		return "lockledger timeline"
	}
	return p.Command
}

func plural(n int, one, many string) string {
	return fmt.Sprintf("%d %s", n, termtext.Plural(n, one, many))
}
