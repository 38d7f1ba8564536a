package timeline_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/replay"
)

// chromiumPath is Debian's chromium (or Chromium under another name).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	clitest.NeedBinary(t, "chromium")
	return ""
}

// TestPageInAHeadlessBrowser opens the page from disk, offline, in a real
// Chromium: the DOM holds replay's bars and the markers, and a click on
// the steal marker shows the steal's reason in the details panel.
func TestPageInAHeadlessBrowser(t *testing.T) {
	bin := chromiumPath(t)
	root := t.TempDir()
	writeScenario(t, root)
	dir := t.TempDir()
	page := filepath.Join(dir, "page.html")
	clitest.Must(t, 0, root, "timeline", "--format", "html", "-o", page)
	hs, evs := replayed(t, root, replay.Filter{})

	browser := headless(t, bin)
	start := time.Now()
	count := func(sel string) int {
		t.Helper()
		n, err := chromedp.Run(browser, chromedp.Evaluate[int](`document.querySelectorAll('`+sel+`').length`))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := chromedp.Do(browser, chromedp.Navigate("file://"+page), chromedp.WaitReady(chromedp.CSS("#timeline"))); err != nil {
		t.Fatal(err)
	}
	bars, stolen, blocked, hbfail := count("#timeline rect.b"), count("#timeline .mk-stolen"), count("#timeline .mk-blocked"), count("#timeline .mk-hbfail")
	if err := chromedp.Do(browser, chromedp.Click(chromedp.CSS("#timeline .mk-stolen"))); err != nil {
		t.Fatal(err)
	}
	details, err := chromedp.Run(browser, chromedp.Text(chromedp.CSS("#details-body")))
	if err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(browser, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("browser: %v", time.Since(start))
	of := func(types ...events.Type) int { return len(markerSeqs(evs, types...)) }
	if bars != len(hs) || stolen != of(events.LockStolen) || blocked != of(events.AcquireBlocked) || hbfail != of(events.HeartbeatFailed) {
		t.Errorf("the DOM holds %d bars, %d steal, %d blocked and %d heartbeat markers; replay has %d holdings and %d, %d, %d such events",
			bars, stolen, blocked, hbfail, len(hs), of(events.LockStolen), of(events.AcquireBlocked), of(events.HeartbeatFailed))
	}
	if !strings.Contains(details, "reason forced_active") || !strings.Contains(details, "lock_stolen") {
		t.Errorf("after a click on the steal marker the details panel reads %q, want the steal and its reason", details)
	}
	png := filepath.Join(t.TempDir(), "timeline.png")
	if err := os.WriteFile(png, shot, 0o600); err != nil {
		t.Fatal(err)
	}
	if len(shot) < 1000 || string(shot[1:4]) != "PNG" {
		t.Errorf("the screenshot is not a PNG (%d bytes)", len(shot))
	}
}

// headless is a tab of its own for one test, in a browser context of its
// own (no cookies, storage or cache shared with another test's), in the
// test binary's one Chromium (bin), which the first test to need it
// starts; the test's end closes the tab and waits for it.
func headless(t *testing.T, bin string) context.Context {
	t.Helper()
	return headlessFor(t, bin, 30*time.Second)
}

// headlessFor is headless for a test that may take up to d in the browser.
func headlessFor(t *testing.T, bin string, d time.Duration) context.Context {
	t.Helper()
	chromium.once.Do(func() { chromium.browser, chromium.err = startChromium(bin) })
	if chromium.err != nil {
		t.Fatalf("starting %s: %v", bin, chromium.err)
	}
	tab, closeTab := chromedp.NewContext(chromium.browser, chromedp.WithNewBrowserContext())
	t.Cleanup(closeTab)
	ctx, cancel := context.WithTimeout(tab, d)
	t.Cleanup(cancel)
	return ctx
}

// chromium is the test binary's one Chromium, started on first use and
// closed by closeChromium when the tests end.
var chromium struct {
	once    sync.Once
	browser context.Context
	err     error
	close   []context.CancelFunc
}

// chromiumStart bounds how long Chromium may take to start and answer.
const chromiumStart = time.Minute

// startChromium starts Chromium offline, its profile in a temporary
// directory of its own that goes with it.
func startChromium(bin string) (context.Context, error) {
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun,
		chromedp.WindowSize(1240, 1000),
	)
	browser, cancelBrowser := chromedp.NewContext(alloc)
	// Cancelling the browser's context closes Chromium and waits for it.
	chromium.close = []context.CancelFunc{cancelBrowser, cancelAlloc}
	// The browser lives as long as the context of its first run: bounded
	// by a timer rather than by that context's deadline.
	timer := time.AfterFunc(chromiumStart, cancelBrowser)
	err := chromedp.Do(browser)
	if !timer.Stop() {
		return nil, fmt.Errorf("not started in %v", chromiumStart)
	}
	return browser, err
}

// closeChromium closes the Chromium that a test started, if one did, and
// waits for it.
func closeChromium() {
	for _, c := range chromium.close {
		c()
	}
}

// TestNewMarksInAHeadlessBrowser checks, as Chromium lays the page out,
// what a postmortem author reads off it: labels inside their bars, eight
// actors in eight colours, bob's wait ending at his bar, the stale
// shading inside it, the refusal's marker, a selection ringed and its
// rows lit, and details wrapped between words in a narrow window.
func TestNewMarksInAHeadlessBrowser(t *testing.T) {
	bin := chromiumPath(t)
	page, hs, _ := marksPage(t)
	browser := headless(t, bin)
	bob := holdingOf(t, hs, "bob")
	bar := fmt.Sprintf(`#timeline rect.b[data-seq="%d"]`, bob.Opened.Seq)
	check := func(what, js string) {
		t.Helper()
		problems, err := chromedp.Run(browser, chromedp.Evaluate[[]string](`(function(){var bad=[];`+js+`;return bad;})()`))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for _, p := range problems {
			t.Errorf("%s: %s", what, p)
		}
	}
	if err := chromedp.Do(browser, chromedp.Navigate("file://"+page), chromedp.WaitReady(chromedp.CSS("#timeline"))); err != nil {
		t.Fatal(err)
	}
	check("labels", `var ls=document.querySelectorAll('#timeline text.label:not(.below)');
		if(ls.length<2)bad.push(ls.length+' labels');
		ls.forEach(function(l){var b=document.querySelector('#timeline rect.b[data-seq="'+l.dataset.seq+'"]').getBBox(),t=l.getBBox();
			if(t.x<b.x||t.x+t.width>b.x+b.width||t.y<b.y-1||t.y+t.height>b.y+b.height+1)
				bad.push('label '+JSON.stringify(l.textContent)+' at '+[t.x,t.y,t.width,t.height]+' outside its bar at '+[b.x,b.y,b.width,b.height]);});`)
	check("colours", `var fill={};document.querySelectorAll('#timeline rect.b').forEach(function(r){fill[r.dataset.actor]=getComputedStyle(r).fill;});
		var as=Object.keys(fill),seen={};if(as.length!==8)bad.push(as.length+' actors');
		as.forEach(function(a){if(fill[a].indexOf('url')>=0)bad.push(a+' is striped');if(seen[fill[a]])bad.push(a+' has '+seen[fill[a]]+'\'s colour '+fill[a]);seen[fill[a]]=a;});`)
	check("wait and stale", `var b=document.querySelector('`+bar+`').getBBox();
		var ws=document.querySelectorAll('#timeline .waited'),ss=document.querySelectorAll('#timeline rect.stale');
		if(ws.length!==1||ss.length!==1){bad.push(ws.length+' waits, '+ss.length+' stale shadings');return bad;}
		var w=ws[0].getBBox(),s=ss[0].getBBox();
		if(w.width<5||Math.abs(w.x+w.width-b.x)>1)bad.push('the wait spans '+[w.x,w.x+w.width]+', the bar starts at '+b.x);
		if(s.x<=b.x+1||s.x+s.width>b.x+b.width+1||s.width<5)bad.push('stale over '+[s.x,s.x+s.width]+', bar over '+[b.x,b.x+b.width]);`)
	check("refusal", `var m=document.querySelectorAll('#timeline .mk-refused');
		if(m.length!==1||m[0].getBBox().width<8)bad.push(m.length+' refusal markers');`)

	// A click on bob's bar (where the stale shading lies over it) selects the bar.
	if err := chromedp.Do(browser, chromedp.Click(chromedp.CSS(bar))); err != nil {
		t.Fatal(err)
	}
	check("selection", fmt.Sprintf(`var s=%d,box=document.getElementById('selbox'),b=document.querySelector('%s').getBBox();
		if(!box||box.getAttribute('display')==='none'){bad.push('no ring drawn');return bad;}
		var r=box.querySelector('rect').getBBox();
		if(r.x>b.x-2||r.y>b.y-2||r.x+r.width<b.x+b.width+2||r.y+r.height<b.y+b.height+2)bad.push('the ring '+[r.x,r.y,r.width,r.height]+' does not go round the bar '+[b.x,b.y,b.width,b.height]);
		['h','e'].forEach(function(p){var row=document.getElementById(p+s);
			if(!row||!row.classList.contains('sel')||getComputedStyle(row.cells[0]).backgroundColor==='rgba(0, 0, 0, 0)')bad.push('row '+p+s+' is not lit');});
		if(document.getElementById('details-hint').textContent.indexOf('seq '+s)<0)bad.push('the details do not say seq '+s+' is selected');`,
		bob.Opened.Seq, bar))

	// Narrow, the details wrap: between words, never inside one.
	if err := chromedp.Do(browser, chromedp.EmulateViewport(420, 900), chromedp.Click(chromedp.CSS("#timeline .mk-blocked"))); err != nil {
		t.Fatal(err)
	}
	check("word breaks", `var wrapped=0;
		document.querySelectorAll('#details-body dd').forEach(function(dd){
			var all=document.createRange();all.selectNodeContents(dd);var tops={};
			for(var r of all.getClientRects())tops[Math.round(r.top)]=1;if(Object.keys(tops).length>1)wrapped++;
			var walk=document.createTreeWalker(dd,NodeFilter.SHOW_TEXT),tn;while((tn=walk.nextNode())){
			var re=/\S+/g,m;while((m=re.exec(tn.data))){if(m[0].length>30)continue;
				var w=document.createRange();w.setStart(tn,m.index);w.setEnd(tn,m.index+m[0].length);
				var ts={};for(var r of w.getClientRects())ts[Math.round(r.top)]=1;
				if(Object.keys(ts).length>1)bad.push('the word '+JSON.stringify(m[0])+' is broken across lines');}}});
		if(wrapped===0)bad.push('no detail wraps at 420px: the check proves nothing');`)
}
