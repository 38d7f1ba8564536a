package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lockledger/lockledger/internal/fixture"
)

// pageEvents is the size of the window the timeline page must draw in
// under a second.
const pageEvents = 10_000

// benchPage writes the timeline page of a 10,000-event ledger and loads it
// in headless Chromium: its size, and the time from navigation to the end
// of the load event (parsing, layout of the SVG and the page's script) as
// the browser itself measures it, the best of three loads.
func benchPage(tmp string) {
	browser, err := exec.LookPath("chromium")
	if err != nil {
		add(row{"timeline page: skipped, chromium not found", "-", "-", "-", "< 1 s, < 5 MB", "-"})
		return
	}
	root := filepath.Join(tmp, "page")
	end := time.Now().UTC().Add(-time.Hour)
	if _, _, err := (fixture.Ledger{Events: pageEvents, Locks: 6, Start: end.Add(-24 * time.Hour), Span: 24 * time.Hour}).WriteEvents(root); err != nil {
		die(err)
	}
	page := filepath.Join(tmp, "page.html")
	runCLI(root, "timeline", "--format", "html", "-o", page)
	fi, err := os.Stat(page)
	if err != nil {
		die(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(browser), chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.UserDataDir(filepath.Join(tmp, "chromium")),
		chromedp.WindowSize(1240, 1000))
	defer cancelAlloc()
	tab, cancelTab := chromedp.NewContext(alloc)
	defer cancelTab()
	var best float64
	for i := range 3 {
		if err := chromedp.Do(tab, chromedp.Navigate("file://"+page), chromedp.WaitReady(chromedp.CSS("#timeline"))); err != nil {
			die(fmt.Errorf("load the timeline page: %w", err))
		}
		loaded, err := chromedp.Run(tab, chromedp.Evaluate[float64](
			`new Promise(done => { const f = () => { const n = performance.getEntriesByType('navigation')[0];
				n && n.loadEventEnd > 0 ? done(n.loadEventEnd) : setTimeout(f, 10) }; f() })`, chromedp.EvalAwaitPromise))
		if err != nil {
			die(fmt.Errorf("read the page's load time: %w", err))
		}
		if i == 0 || loaded < best {
			best = loaded
		}
	}
	mb := float64(fi.Size()) / (1 << 20)
	ok := best < 1000 && mb < 5
	add(row{fmt.Sprintf("timeline page of %d events: size, and navigation to load end in headless Chromium (best of 3)", pageEvents),
		fmt.Sprintf("%.2f MB, %.0f ms", mb, best), "-", "-", "< 5 MB, < 1 s", yes(ok)})
}
