package timeline_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun,
		chromedp.UserDataDir(filepath.Join(dir, "profile")),
		chromedp.WindowSize(1240, 1000),
	)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(alloc)
	// Cancelling the browser's context closes Chromium and waits for it.
	defer cancelBrowser()

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
