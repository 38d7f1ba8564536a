package timeline_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/testclock"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/timeline"
)

func TestMain(m *testing.M) { clitest.Main(m, clitest.AtExit(closeChromium)) }

var t0 = time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)

// scenarioLedger opens the ledger at root for a scenario, on a clock
// that starts at t0 and steps a minute per reading (which spreads the
// picture out the same way on every run), and id, the identity of
// request rid by actor from this process.
func scenarioLedger(t *testing.T, root string) (l *ledger.Ledger, id func(rid, actor string) ledger.Identity) {
	t.Helper()
	l, err := ledger.Open(context.Background(), root, ledger.WithClock(testclock.New(t0).Stepping(time.Minute).Now), ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	me := os.Getpid()
	return l, func(rid, actor string) ledger.Identity { return ledger.Identity{RequestID: rid, Actor: actor, PID: me} }
}

// writeScenario writes a postmortem's worth of events on two locks with
// the ledger itself: a failed release, a blocked acquire, a steal, failed
// heartbeats (one lost), and a holding still open at the end.
func writeScenario(t *testing.T, root string) (ledgerID string) {
	t.Helper()
	ctx := context.Background()
	l, id := scenarioLedger(t, root)
	defer l.Close()
	acq := func(lock, rid, actor string) {
		t.Helper()
		if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: lock, Identity: id(rid, actor), TTL: time.Hour,
			Intent: "deploy", Metadata: map[string]string{"ticket": "INC-7"}}); err != nil {
			t.Fatal(err)
		}
	}
	rel := func(lock, rid, actor, result, step string, code *int) {
		t.Helper()
		if _, err := l.Release(ctx, ledger.ReleaseRequest{Lock: lock, Identity: id(rid, actor), Result: result, FailureStep: step, ExitCode: code}); err != nil {
			t.Fatal(err)
		}
	}
	three := 3
	acq("app-prod", "req-alice", "alice")
	if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "app-prod", Identity: id("req-bob", "bob"), RecordBlocked: true, Waited: 90 * time.Second}); err == nil {
		t.Fatal("bob acquired a held lock")
	}
	if err := l.RecordHeartbeatFailure(ctx, "app-prod", id("req-alice", "alice"), 2, "disk full", false); err != nil {
		t.Fatal(err)
	}
	rel("app-prod", "req-alice", "alice", events.ResultFailure, "migrate", &three)
	acq("app-prod", "req-carol", "carol")
	if _, err := l.Steal(ctx, ledger.StealRequest{AcquireRequest: ledger.AcquireRequest{Lock: "app-prod", Identity: id("req-dave", "dave"), TTL: time.Hour},
		Active: true, Note: "carol's job hung"}); err != nil {
		t.Fatal(err)
	}
	if err := l.RecordHeartbeatFailure(ctx, "app-prod", id("req-carol", "carol"), 1, "lock taken", true); err != nil {
		t.Fatal(err)
	}
	acq("db-prod", "req-erin", "erin")
	rel("db-prod", "req-erin", "erin", events.ResultSuccess, "", nil)
	acq("db-prod", "req-frank", "frank")
	return l.ID()
}

// replayed is what replay makes of root's ledger for filter f: the
// holdings and the events, the page's two sources.
func replayed(t *testing.T, root string, f replay.Filter) ([]*replay.Holding, []*replay.Event) {
	t.Helper()
	db := clitest.DB(t, root)
	hs, err := replay.Holdings(context.Background(), db, f)
	if err != nil {
		t.Fatal(err)
	}
	var evs []*replay.Event
	if err := replay.Scan(context.Background(), db, f, func(ev *replay.Event) error { evs = append(evs, ev); return nil }); err != nil {
		t.Fatal(err)
	}
	return hs, evs
}

// node is an element of a parsed page or picture.
type node struct {
	name  string
	attrs map[string]string
	text  string
}

func (n node) class(c string) bool { return slices.Contains(strings.Fields(n.attrs["class"]), c) }

func parseHTML(t *testing.T, b []byte) []node {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var out []node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			e := node{name: n.Data, attrs: map[string]string{}}
			for _, a := range n.Attr {
				e.attrs[a.Key] = a.Val
			}
			if n.FirstChild != nil && n.FirstChild.Type == html.TextNode {
				e.text = n.FirstChild.Data
			}
			out = append(out, e)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return out
}

func parseSVG(t *testing.T, b []byte) []node {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = true
	var out []node
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v", err)
		}
		if cd, ok := tok.(xml.CharData); ok && len(out) > 0 && out[len(out)-1].text == "" {
			out[len(out)-1].text = strings.TrimSpace(string(cd))
		}
		if se, ok := tok.(xml.StartElement); ok {
			e := node{name: se.Name.Local, attrs: map[string]string{}}
			for _, a := range se.Attr {
				key := a.Name.Local
				if a.Name.Space != "" && a.Name.Space != "xmlns" {
					key = a.Name.Space + ":" + key
				}
				if a.Name.Space == "xmlns" || key == "xmlns" {
					key = "xmlns"
				}
				e.attrs[key] = a.Value
			}
			out = append(out, e)
		}
	}
}

// seqs is the data-seq of every element of class c.
func seqs(ns []node, c string) []string {
	var out []string
	for _, n := range ns {
		if n.class(c) {
			out = append(out, n.attrs["data-seq"])
		}
	}
	return out
}

func holdingSeqs(hs []*replay.Holding) []string {
	var out []string
	for _, h := range hs {
		out = append(out, fmt.Sprint(h.Opened.Seq))
	}
	return out
}

func markerSeqs(evs []*replay.Event, types ...events.Type) []string {
	var out []string
	for _, ev := range evs {
		if slices.Contains(types, ev.Type) {
			out = append(out, fmt.Sprint(ev.Seq))
		}
	}
	return out
}

// checkNoExternalURL fails on anything a browser would fetch or follow
// off the page: every src, href and url() must be a fragment or data:,
// and no http(s) URL may appear anywhere (the SVG namespace name, in the
// xmlns attribute, is a name that is never fetched).
func checkNoExternalURL(t *testing.T, raw []byte, ns []node) {
	t.Helper()
	for _, n := range ns {
		for k, v := range n.attrs {
			v = strings.TrimSpace(v)
			switch {
			case k == "xmlns":
				if v != "http://www.w3.org/2000/svg" {
					t.Errorf("<%s xmlns=%q>", n.name, v)
				}
				continue
			case k == "src" || k == "href" || strings.HasSuffix(k, ":href") || k == "action" || k == "srcset":
				if !strings.HasPrefix(v, "#") && !strings.HasPrefix(v, "data:") {
					t.Errorf("<%s %s=%q> points off the page", n.name, k, v)
				}
			}
			if strings.Contains(v, "url(") && !strings.Contains(v, "url(#") {
				t.Errorf("<%s %s=%q> uses a url() off the page", n.name, k, v)
			}
		}
		if (n.name == "script" || n.name == "link" || n.name == "img" || n.name == "iframe") && n.attrs["src"]+n.attrs["href"] != "" {
			t.Errorf("<%s> loads %q", n.name, n.attrs["src"]+n.attrs["href"])
		}
	}
	stripped := strings.ReplaceAll(string(raw), `xmlns="http://www.w3.org/2000/svg"`, "")
	for _, bad := range []string{"http:", "https:", "src=\"//", "href=\"//", "@import"} {
		if i := strings.Index(stripped, bad); i >= 0 {
			t.Errorf("the page holds %q: ...%s...", bad, stripped[max(i-60, 0):min(i+60, len(stripped))])
		}
	}
}

func TestPageDrawsReplaysHoldingsAndOneMarkerPerNotableEvent(t *testing.T) {
	root := t.TempDir()
	id := writeScenario(t, root)
	page := filepath.Join(t.TempDir(), "page.html")
	clitest.Must(t, 0, root, "timeline", "--format", "html", "-o", page)
	raw, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	ns := parseHTML(t, raw)
	hs, evs := replayed(t, root, replay.Filter{})

	// One bar per holding, as replay folds them; the scenario has five.
	if got, want := seqs(ns, "b"), holdingSeqs(hs); !slices.Equal(got, want) || len(want) != 5 {
		t.Errorf("bars at seqs %v, replay's holdings at %v (want 5)", got, want)
	}
	for _, n := range ns {
		if n.class("b") && n.attrs["data-request-id"] == "" {
			t.Errorf("bar %s has no data-request-id", n.attrs["data-seq"])
		}
	}
	// Still held: dave's steal and frank's acquisition end in an arrow.
	var open []string
	for _, n := range ns {
		if n.class("open") {
			open = append(open, n.attrs["data-request-id"])
		}
	}
	if !slices.Equal(open, []string{"req-dave", "req-frank"}) {
		t.Errorf("bars open at the window's end: %v, want dave's and frank's", open)
	}
	for c, types := range map[string][]events.Type{
		"mk-stolen":  {events.LockStolen},
		"mk-blocked": {events.AcquireBlocked},
		"mk-hbfail":  {events.HeartbeatFailed},
	} {
		got, want := seqs(ns, c), markerSeqs(evs, types...)
		if !slices.Equal(got, want) || len(want) == 0 {
			t.Errorf("%s markers at seqs %v, events at %v", c, got, want)
		}
	}
	if got := seqs(ns, "mk-failrel"); len(got) != 1 {
		t.Errorf("failed-release markers at %v, want alice's one", got)
	}
	// Every event has its row in the text table, every holding in the other.
	for _, ev := range evs {
		if !slices.ContainsFunc(ns, func(n node) bool { return n.name == "tr" && n.attrs["id"] == fmt.Sprintf("e%d", ev.Seq) }) {
			t.Errorf("no table row for seq %d", ev.Seq)
		}
	}
	// The header is evidence: ledger id, head hash and verify's verdict.
	head := clitest.Strings(t, root, `SELECT hash FROM events ORDER BY seq DESC LIMIT 1`)[0]
	for _, want := range []string{head, id, "OK</span>", "none stored"} {
		if !bytes.Contains(raw, []byte(want)) {
			t.Errorf("the header does not hold %q", want)
		}
	}
	checkNoExternalURL(t, raw, ns)

	// The bare SVG draws the same, and is well-formed XML.
	pic := filepath.Join(t.TempDir(), "pic.svg")
	clitest.Must(t, 0, root, "timeline", "--format", "svg", "-o", pic)
	rawSVG, err := os.ReadFile(pic)
	if err != nil {
		t.Fatal(err)
	}
	svg := parseSVG(t, rawSVG)
	if got, want := seqs(svg, "b"), holdingSeqs(hs); !slices.Equal(got, want) {
		t.Errorf("SVG bars at %v, holdings at %v", got, want)
	}
	if got, want := seqs(svg, "mk"), markerSeqs(evs, events.LockStolen, events.AcquireBlocked, events.HeartbeatFailed, events.LockReleased); len(got) != len(want)-1 {
		// the one successful release has no marker
		t.Errorf("SVG markers at %v, notable events %v", got, want)
	}
	checkNoExternalURL(t, rawSVG, svg)
}

func TestPageWindowDrawsHoldingsBegunBeforeIt(t *testing.T) {
	root := t.TempDir()
	writeScenario(t, root)
	// From bob's blocked attempt on: alice's holding began before it.
	at := clitest.Strings(t, root, `SELECT at FROM events WHERE type = 'acquire_blocked'`)[0]
	since, err := events.ParseTime(at)
	if err != nil {
		t.Fatal(err)
	}
	f := replay.Filter{Lock: "app-prod", Since: since}
	r := clitest.Must(t, 0, root, "timeline", "--lock", "app-prod", "--since", at, "--format", "svg")
	svg := parseSVG(t, []byte(r.Stdout))
	hs, evs := replayed(t, root, f)
	if got, want := seqs(svg, "b"), holdingSeqs(hs); !slices.Equal(got, want) || len(want) != 3 || hs[0].Opened.Actor != "alice" {
		t.Errorf("bars at %v, replay's holdings in the window at %v (alice's, carol's, dave's)", got, want)
	}
	if evs[0].Seq <= hs[0].Opened.Seq {
		t.Fatalf("the window should start after alice's acquisition")
	}
}

func TestTimelineRejectsABadFormatAndAStrayOutput(t *testing.T) {
	root := t.TempDir()
	writeScenario(t, root)
	if r := clitest.Run(t, root, "timeline", "--format", "png"); r.Code != 2 || !strings.Contains(r.Stderr, "--format") {
		t.Errorf("--format png: exit %d, %s", r.Code, r.Stderr)
	}
	if r := clitest.Run(t, root, "timeline", "--format", "csv", "-o", filepath.Join(t.TempDir(), "x")); r.Code != 2 {
		t.Errorf("-o with csv: exit %d, %s", r.Code, r.Stderr)
	}
}

// synthetic is n events of acquire, heartbeats and release cycles on a few
// locks, as a busy ledger writes them, folded by replay.
func synthetic(n int) *timeline.Page {
	p := &timeline.Page{Generated: t0, Describe: func(ev *replay.Event) string { return "token 1, ttl 60s, intent deploy v42, metadata ticket=INC-7" }}
	fold := replay.NewHoldingFold()
	at := t0
	for seq := int64(1); seq <= int64(n); seq++ {
		lock := fmt.Sprintf("lock-%d", seq%7)
		phase := (seq / 7) % 3
		typ := []events.Type{events.LockAcquired, events.LockHeartbeat, events.LockReleased}[phase]
		rid := fmt.Sprintf("req_01M846GZXD1YP8KG31P%09d", (seq/21)*7+seq%7)
		at = at.Add(1500 * time.Millisecond)
		ev := &replay.Event{Envelope: events.Envelope{Seq: seq, Type: typ, At: events.FormatTime(at), LockName: lock,
			RequestID: rid, Actor: fmt.Sprintf("actor-%d", seq%11), HostID: "build-host-17", PID: 40000 + int(seq%97)},
			Time: at, Hash: fmt.Sprintf("%064x", seq), Result: events.ResultSuccess, TTLSeconds: 60}
		if typ == events.LockReleased && seq%5 == 0 {
			ev.Result, ev.FailureStep = events.ResultFailure, "migrate"
		}
		fold.Apply(ev)
		p.Events = append(p.Events, ev)
	}
	p.Holdings = append(fold.Closed, fold.Open()...)
	slices.SortFunc(p.Holdings, func(a, b *replay.Holding) int { return int(a.Opened.Seq - b.Opened.Seq) })
	return p
}

func TestTenThousandEventsMakeAPageUnderFiveMegabytes(t *testing.T) {
	p := synthetic(10000)
	var b bytes.Buffer
	if err := timeline.WriteHTML(&b, p); err != nil {
		t.Fatal(err)
	}
	if b.Len() >= 5<<20 {
		t.Errorf("10,000 events: %d bytes, want under 5 MB", b.Len())
	}
	// Counted, not parsed: the structure tests parse smaller pages.
	if got := bytes.Count(b.Bytes(), []byte(`<rect class="b`)); got != len(p.Holdings) || got < 3000 {
		t.Errorf("%d bars for %d holdings", got, len(p.Holdings))
	}
	t.Logf("10,000 events, %d holdings: %d bytes", len(p.Holdings), b.Len())
}

func TestManyHoldingsAreAggregatedAndThePageSaysSo(t *testing.T) {
	p := synthetic(3 * (timeline.AggregateAbove + 500))
	if len(p.Holdings) <= timeline.AggregateAbove {
		t.Fatalf("only %d holdings", len(p.Holdings))
	}
	var b bytes.Buffer
	if err := timeline.WriteSVG(&b, p); err != nil {
		t.Fatal(err)
	}
	ns := parseSVG(t, b.Bytes())
	if n := len(seqs(ns, "b")); n != 0 {
		t.Errorf("%d single bars drawn above the limit", n)
	}
	aggs, total := 0, 0
	for _, n := range ns {
		if n.class("agg") {
			aggs++
			var c int
			fmt.Sscan(n.attrs["data-count"], &c)
			total += c
			if n.attrs["data-seq"] == "" {
				t.Errorf("aggregate bar without data-seq")
			}
		}
	}
	if aggs == 0 || aggs > 7*1100 || total != len(p.Holdings) {
		t.Errorf("%d aggregate bars standing for %d holdings, want at most one per lane and pixel, for all %d", aggs, total, len(p.Holdings))
	}
	b.Reset()
	if err := timeline.WriteHTML(&b, p); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b.Bytes(), []byte(`<p class="note" id="aggregated">`)) {
		t.Errorf("the page does not say it aggregated")
	}
}

// Readers held at once are stacked in their lane's bar, one row each;
// a writer after them gets the whole bar.
func TestSharedHoldingsAreStackedInTheirLane(t *testing.T) {
	p := &timeline.Page{Generated: t0, Describe: func(*replay.Event) string { return "" }}
	fold := replay.NewHoldingFold()
	at := t0
	add := func(typ events.Type, rid string, shared bool) {
		at = at.Add(time.Second)
		ev := &replay.Event{Envelope: events.Envelope{Seq: int64(len(p.Events) + 1), Type: typ, At: events.FormatTime(at),
			LockName: "db", RequestID: rid, Actor: rid, HostID: "h", PID: 1}, Time: at, Hash: fmt.Sprintf("%064x", len(p.Events)+1),
			Result: events.ResultSuccess, TTLSeconds: 60}
		if shared {
			ev.Mode = events.ModeShared
		}
		fold.Apply(ev)
		p.Events = append(p.Events, ev)
	}
	add(events.LockAcquired, "r1", true)
	add(events.LockAcquired, "r2", true)
	add(events.LockReleased, "r1", false)
	add(events.LockReleased, "r2", false)
	add(events.LockAcquired, "w", false)
	p.Holdings = append(fold.Closed, fold.Open()...)
	var b bytes.Buffer
	if err := timeline.WriteSVG(&b, p); err != nil {
		t.Fatal(err)
	}
	bars := map[string]node{}
	for _, n := range parseSVG(t, b.Bytes()) {
		if n.name == "rect" && n.class("b") {
			bars[n.attrs["data-request-id"]] = n
		}
	}
	r1, r2, w := bars["r1"], bars["r2"], bars["w"]
	if !r1.class("shared") || !r2.class("shared") || w.class("shared") {
		t.Fatalf("classes: r1 %q, r2 %q, w %q", r1.attrs["class"], r2.attrs["class"], w.attrs["class"])
	}
	if r1.attrs["y"] == r2.attrs["y"] {
		t.Errorf("two readers held at once drawn on one row (y %s)", r1.attrs["y"])
	}
	if r1.attrs["height"] == w.attrs["height"] {
		t.Errorf("a reader's bar is as tall as the writer's (%s): the lane's rows are not split", w.attrs["height"])
	}
}
