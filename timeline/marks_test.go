package timeline_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/timeline"
)

// marksActors are the eight actors of writeMarksScenario.
var marksActors = []string{"grace", "bob", "ann", "cy", "dee", "eli", "fay", "gus"}

// writeMarksScenario writes what a postmortem author looks for on a
// page: on api, grace holds (one heartbeat), bob waits 30s and gives up,
// then tries to release grace's lock (refused); grace releases, and bob
// takes the lock under the same request with a TTL of two minutes and
// never beats, so that his holding goes stale; on fleet, six more actors
// hold in turn: eight actors in all.
func writeMarksScenario(t *testing.T, root string) {
	t.Helper()
	ctx := context.Background()
	l, id := scenarioLedger(t, root)
	defer l.Close()
	acq := func(lock, rid, actor string, ttl time.Duration) {
		t.Helper()
		if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: lock, Identity: id(rid, actor), TTL: ttl}); err != nil {
			t.Fatal(err)
		}
	}
	rel := func(lock, rid, actor string) {
		t.Helper()
		if _, err := l.Release(ctx, ledger.ReleaseRequest{Lock: lock, Identity: id(rid, actor), Result: events.ResultSuccess}); err != nil {
			t.Fatal(err)
		}
	}
	acq("api", "req-grace", "grace", time.Hour)
	if _, err := l.Heartbeat(ctx, "api", id("req-grace", "grace")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "api", Identity: id("req-bob", "bob"), RecordBlocked: true, Waited: 30 * time.Second}); err == nil {
		t.Fatal("bob acquired a held lock")
	}
	if _, err := l.Release(ctx, ledger.ReleaseRequest{Lock: "api", Identity: id("req-bob", "bob"), Result: events.ResultSuccess}); err == nil {
		t.Fatal("bob released grace's lock")
	}
	rel("api", "req-grace", "grace")
	acq("api", "req-bob", "bob", 2*time.Minute)
	for i, a := range marksActors[2:] {
		rid := fmt.Sprintf("req-%s-%d", a, i)
		acq("fleet", rid, a, time.Hour)
		rel("fleet", rid, a)
	}
}

// marksPage is the HTML page of writeMarksScenario's ledger and what replay
// makes of it.
func marksPage(t *testing.T) (page string, hs []*replay.Holding, evs []*replay.Event) {
	t.Helper()
	root := t.TempDir()
	writeMarksScenario(t, root)
	page = filepath.Join(t.TempDir(), "marks.html")
	clitest.Must(t, 0, root, "timeline", "--format", "html", "-o", page)
	hs, evs = replayed(t, root, replay.Filter{})
	return page, hs, evs
}

func holdingOf(t *testing.T, hs []*replay.Holding, actor string) *replay.Holding {
	t.Helper()
	i := slices.IndexFunc(hs, func(h *replay.Holding) bool { return h.Opened.Actor == actor })
	if i < 0 {
		t.Fatalf("no holding by %s", actor)
	}
	return hs[i]
}

func TestEightActorsGetEightColoursAndNoStripes(t *testing.T) {
	page, _, _ := marksPage(t)
	raw, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	fills := map[string]string{}
	for _, n := range parseHTML(t, raw) {
		if n.class("b") {
			fills[n.attrs["data-actor"]] = n.attrs["fill"]
		}
	}
	seen := map[string]string{}
	for _, a := range marksActors {
		f := fills[a]
		if f == "" || strings.HasPrefix(f, "url(") {
			t.Errorf("%s's bars are painted %q, want a plain colour", a, f)
		}
		if other, ok := seen[f]; ok {
			t.Errorf("%s and %s share the colour %s", other, a, f)
		}
		seen[f] = a
	}
}

func TestPageMarksWaitsStaleHoldersRefusalsAndLabels(t *testing.T) {
	page, hs, evs := marksPage(t)
	raw, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	ns := parseHTML(t, raw)
	bob, grace := holdingOf(t, hs, "bob"), holdingOf(t, hs, "grace")
	bobSeq := strconv.FormatInt(bob.Opened.Seq, 10)
	var bar node
	for _, n := range ns {
		if n.class("b") && n.attrs["data-seq"] == bobSeq {
			bar = n
		}
	}
	num := func(n node, k string) float64 {
		f, err := strconv.ParseFloat(n.attrs[k], 64)
		if err != nil {
			t.Fatalf("<%s %s=%q>: %v", n.name, k, n.attrs[k], err)
		}
		return f
	}

	// bob waited from his first blocked attempt (30s before it) to his
	// acquisition, under the same request: one span, ending at his bar.
	if got := seqs(ns, "waited"); !slices.Equal(got, []string{bobSeq}) {
		t.Errorf("wait spans for the holdings at seqs %v, want bob's (%s) alone", got, bobSeq)
	}
	// bob's TTL (2 minutes) ran out with no heartbeat; grace beat within hers.
	var stale []node
	for _, n := range ns {
		if n.class("stale") {
			stale = append(stale, n)
		}
	}
	if len(stale) != 1 || stale[0].attrs["data-seq"] != bobSeq {
		t.Fatalf("stale shading on %v, want bob's holding (seq %s) alone", seqs(ns, "stale"), bobSeq)
	}
	// It starts two minutes into bob's bar: the bar is drawn to the
	// window's end, so the shading ends there too.
	x0, w := num(bar, "x"), num(bar, "width")
	sx, sw := num(stale[0], "x"), num(stale[0], "width")
	if sx <= x0 || sx+sw > x0+w+0.2 {
		t.Errorf("stale shading over [%.1f, %.1f], bob's bar over [%.1f, %.1f]", sx, sx+sw, x0, x0+w)
	}
	// The refused release has its marker.
	if got, want := seqs(ns, "mk-refused"), markerSeqs(evs, events.ActionRefused); !slices.Equal(got, want) || len(want) != 1 {
		t.Errorf("refusal markers at %v, action_refused at %v", got, want)
	}
	// Every bar long enough carries its actor's name.
	labels := map[string]string{}
	for _, n := range ns {
		if n.class("label") {
			labels[n.attrs["data-seq"]] = n.text
		}
	}
	for _, h := range []*replay.Holding{grace, bob} {
		if got := labels[strconv.FormatInt(h.Opened.Seq, 10)]; got != h.Opened.Actor {
			t.Errorf("the bar of %s's holding is labelled %q", h.Opened.Actor, got)
		}
	}
}

// A wait recorded on the acquisition itself (newer ledgers record it) is
// drawn as well, and a wait that gave up for good makes no span; labels
// are escaped and cut to their bar.
func TestWaitSpansLabelsAndStaleFromSyntheticEvents(t *testing.T) {
	long := "release-bot\x1b[31m-" + strings.Repeat("x", 80)
	p := &timeline.Page{Generated: t0, Describe: func(*replay.Event) string { return "" }}
	fold := replay.NewHoldingFold()
	add := func(sec int, typ events.Type, rid, actor string, set func(*replay.Event)) {
		at := t0.Add(time.Duration(sec) * time.Second)
		ev := &replay.Event{Envelope: events.Envelope{Seq: int64(len(p.Events) + 1), Type: typ, At: events.FormatTime(at),
			LockName: "db", RequestID: rid, Actor: actor, HostID: "h", PID: 1}, Time: at, Hash: fmt.Sprintf("%064x", len(p.Events)+1),
			Result: events.ResultSuccess, TTLSeconds: 60}
		if set != nil {
			set(ev)
		}
		fold.Apply(ev)
		p.Events = append(p.Events, ev)
	}
	add(0, events.LockAcquired, "r1", long, nil)
	add(30, events.AcquireBlocked, "r9", "quitter", func(ev *replay.Event) { ev.WaitedSeconds = 20 })
	add(50, events.LockHeartbeat, "r1", long, nil)
	add(200, events.LockReleased, "r1", long, nil)
	add(260, events.LockAcquired, "r2", "patient", func(ev *replay.Event) { ev.WaitedSeconds = 45 })
	add(290, events.LockReleased, "r2", "patient", nil)
	p.Holdings = append(fold.Closed, fold.Open()...)
	var b bytes.Buffer
	if err := timeline.WriteSVG(&b, p); err != nil {
		t.Fatal(err)
	}
	ns := parseSVG(t, b.Bytes())
	if got := seqs(ns, "waited"); !slices.Equal(got, []string{"5"}) {
		t.Errorf("wait spans at %v, want patient's recorded wait (seq 5) alone", got)
	}
	// r1 beat at 50s, then nothing for 150s with a TTL of 60s.
	if got := seqs(ns, "stale"); !slices.Equal(got, []string{"1"}) {
		t.Errorf("stale shading at %v, want r1's", got)
	}
	for _, n := range parseHTML(t, b.Bytes()) {
		if n.class("label") && n.attrs["data-seq"] == "1" {
			if !strings.HasPrefix(n.text, `release-bot\x1b[31m-`) || !strings.HasSuffix(n.text, "…") || strings.ContainsRune(n.text, 0x1b) {
				t.Errorf("the long actor's label reads %q, want it escaped and cut with an ellipsis", n.text)
			}
			return
		}
	}
	t.Errorf("the long actor's bar has no label")
}

// With heartbeats left out of the query, nothing can be judged stale.
func TestNoStaleShadingWithoutHeartbeats(t *testing.T) {
	root := t.TempDir()
	writeMarksScenario(t, root)
	out := clitest.Must(t, 0, root, "timeline", "--type", "lock_acquired,lock_released", "--format", "svg").Stdout
	if got := seqs(parseSVG(t, []byte(out)), "stale"); len(got) != 0 {
		t.Errorf("stale shading at %v without the heartbeats", got)
	}
	out = clitest.Must(t, 0, root, "timeline", "--type", "lock_acquired,lock_released,lock_heartbeat", "--format", "svg").Stdout
	if got := seqs(parseSVG(t, []byte(out)), "stale"); len(got) != 1 {
		t.Errorf("stale shading at %v with the heartbeats, want bob's", got)
	}
}

// A wait or a TTL no time can hold (a number another writer signed) keeps
// the window where the events are.
func TestHugeWaitsAndTTLsKeepTheWindow(t *testing.T) {
	p := &timeline.Page{Generated: t0}
	fold := replay.NewHoldingFold()
	for i, typ := range []events.Type{events.AcquireBlocked, events.LockAcquired} {
		at := t0.Add(time.Duration(i) * time.Minute)
		ev := &replay.Event{Envelope: events.Envelope{Seq: int64(i + 1), Type: typ, At: events.FormatTime(at), LockName: "db",
			RequestID: "r", Actor: "a", HostID: "h", PID: 1}, Time: at, Hash: fmt.Sprintf("%064x", i+1),
			TTLSeconds: 1 << 62, WaitedSeconds: 1e300}
		fold.Apply(ev)
		p.Events = append(p.Events, ev)
	}
	p.Holdings = fold.Open()
	var b bytes.Buffer
	if err := timeline.WriteSVG(&b, p); err != nil {
		t.Fatal(err)
	}
	ns := parseSVG(t, b.Bytes())
	pictureWidth, err := strconv.ParseFloat(ns[0].attrs["width"], 64)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ns {
		if n.name == "title" || n.name == "svg" {
			continue
		}
		for _, k := range []string{"x", "width", "x1", "x2"} {
			if v, ok := n.attrs[k]; ok {
				if f, err := strconv.ParseFloat(v, 64); err != nil || f < 0 || f > pictureWidth {
					t.Errorf("<%s %s=%q> off the picture", n.name, k, v)
				}
			}
		}
	}
	// The window reaches back as far as the longest wait drawn, a century
	// (and a margin).
	if m := regexp.MustCompile(`<title id="svgtitle">[^<]* from (\d{4})-`).FindSubmatch(b.Bytes()); m == nil {
		t.Errorf("no window in the title")
	} else if y, _ := strconv.Atoi(string(m[1])); y < t0.Year()-105 {
		t.Errorf("the window begins in %d", y)
	}
	if !bytes.Contains(b.Bytes(), []byte(`class="waited"`)) || bytes.Contains(b.Bytes(), []byte(`class="stale"`)) {
		t.Errorf("want the wait drawn and no stale shading (the TTL has not run out)")
	}
}
