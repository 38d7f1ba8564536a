package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/ledger"
)

var (
	yearSizes    = flag.String("year-sizes", "1000000,10000000", "the ledgers the year group's audit reads run on, smallest first (comma-separated event counts; each generated once and kept, see -cache)")
	generateOnly = flag.Bool("generate-only", false, "generate the -year-sizes ledgers not kept yet, then exit")
)

// sizes parses -year-sizes.
func sizes() []int {
	var out []int
	for _, f := range strings.Split(*yearSizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			die(fmt.Errorf("-year-sizes: %q is not a count of events", f))
		}
		out = append(out, n)
	}
	return out
}

// generateYear makes every -year-sizes ledger not kept yet.
func generateYear() {
	for _, n := range sizes() {
		keptLedger(yearSpec(n))
	}
	fmt.Fprintln(os.Stderr, "kept in", cacheDir())
}

// yearRead is one audit read the year group measures at every size.
type yearRead struct {
	name string
	args func(info keptInfo) []string
	// targeted: the read must cost the window, not the year: <= 100 ms
	// warm at the largest size and <= 1.5x from the smallest to it.
	targeted bool
}

// Each read looks at the middle of its ledger's span, so that a ledger
// ten times as long has ten times the history before that instant.
var yearReads = []yearRead{
	{"`who L --at T` (the busiest lock)", func(k keptInfo) []string {
		return []string{"who", k.Busiest, "--at", rfc(k.Spec.Middle()), "--json"}
	}, true},
	{"`who L --at T` (a lock held since the start, a heartbeat every 10 s)", func(k keptInfo) []string {
		return []string{"who", fixture.HeldLock, "--at", rfc(k.Spec.Middle()), "--json"}
	}, true},
	{"`history L --format jsonl` (the busiest lock, all of it)", func(k keptInfo) []string {
		return []string{"history", k.Busiest, "--format", "jsonl"}
	}, false},
	{"`replay --as-of T --json` (every lock)", func(k keptInfo) []string {
		return []string{"replay", "--as-of", rfc(k.Spec.Middle()), "--json"}
	}, true},
	{"`replay --as-of T --lock L --json` (the busiest lock)", func(k keptInfo) []string {
		return []string{"replay", "--as-of", rfc(k.Spec.Middle()), "--lock", k.Busiest, "--json"}
	}, true},
	{"`timeline --since T --until T+1h --format jsonl` (every lock)", func(k keptInfo) []string {
		return []string{"timeline", "--since", rfc(k.Spec.Middle()), "--until", rfc(k.Spec.Middle().Add(time.Hour)), "--format", "jsonl"}
	}, true},
	{"`metrics` (one scrape)", func(keptInfo) []string { return []string{"metrics"} }, true},
	{"`status L` (the busiest lock)", func(k keptInfo) []string { return []string{"status", k.Busiest} }, false},
	{"`verify` (what the binary does by default, after one verify in the same trust store)", func(keptInfo) []string {
		return []string{"verify"}
	}, false},
}

func rfc(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// yearSample is what one read cost at one size: the median wall time
// and the highest peak RSS (KiB) of n warm runs.
type yearSample struct {
	wall time.Duration
	rss  int64
	n    int
}

// yearBudget bounds the measured runs of one read at one size: a read
// slower than it is measured by one run, a fast one up to yearRuns times
// after a warm-up run.
const (
	yearBudget = 20 * time.Second
	yearRuns   = 5
)

// benchYear runs each audit read on each kept ledger of -year-sizes: warm
// (the database read once first, then one unmeasured run of each read),
// the median of up to yearRuns runs and the peak RSS, and prints the largest size against the smallest with the
// growth between them. The reads run --unsigned with a trust store of
// this run's: they make no key and sign nothing into the kept ledgers
// (verify still records itself there, as it does in any ledger).
func benchYear(tmp string) {
	ns := sizes()
	infos, roots := make([]keptInfo, len(ns)), make([]string, len(ns))
	for i, n := range ns {
		roots[i], infos[i] = keptLedger(yearSpec(n))
	}
	got := make([][]yearSample, len(yearReads))
	for i := range yearReads {
		got[i] = make([]yearSample, len(ns))
	}
	incremental := hasIncrementalVerify()
	var after []yearSample // verify after yearNewEvents new events, by size
	for j := range ns {
		trust := filepath.Join(tmp, fmt.Sprintf("trust-year-%d", ns[j]))
		warmFile(filepath.Join(roots[j], ledger.DBFile))
		for i, r := range yearReads {
			got[i][j] = measureYear(roots[j], trust, r.args(infos[j]))
			fmt.Fprintf(os.Stderr, "  %d events: %s: %s, %.1f MiB (%d runs)\n", ns[j], r.name, ms(got[i][j].wall), mib(got[i][j].rss), got[i][j].n)
		}
		if incremental {
			appendCycles(roots[j], yearNewEvents/2)
			t, rss := runYear(roots[j], trust, []string{"verify"})
			after = append(after, yearSample{t, rss, 1})
			fmt.Fprintf(os.Stderr, "  %d events: `verify` after %d new events: %s, %.1f MiB\n", ns[j], yearNewEvents, ms(t), mib(rss))
		}
	}
	small, big := 0, len(ns)-1
	for i, r := range yearReads {
		s, b := got[i][small], got[i][big]
		growth := float64(b.wall) / float64(s.wall)
		target, verdict := "<= 128 MiB", yearVerdict(b, growth, false)
		if r.targeted {
			target, verdict = "<= 100 ms, <= 1.5x, <= 128 MiB", yearVerdict(b, growth, true)
		}
		add(row{fmt.Sprintf("%s at %d vs %d events: warm median (runs), peak RSS", r.name, ns[big], ns[small]),
			fmt.Sprintf("%s (%d), %.1f MiB", ms(b.wall), b.n, mib(b.rss)), fmt.Sprintf("%s (%d), %.1f MiB", ms(s.wall), s.n, mib(s.rss)),
			fmt.Sprintf("%.2fx", growth), target, verdict})
	}
	name := fmt.Sprintf("incremental `verify` after %d new events (a verify before them in the same trust store) at %d vs %d events, peak RSS", yearNewEvents, ns[big], ns[small])
	if !incremental {
		add(row{name, "skipped: this binary's `verify --help` names no incremental verify", "-", "-", "<= 2 s, <= 128 MiB", "-"})
		return
	}
	b, s := after[big], after[small]
	add(row{name, fmt.Sprintf("%s, %.1f MiB", ms(b.wall), mib(b.rss)), fmt.Sprintf("%s, %.1f MiB", ms(s.wall), mib(s.rss)),
		fmt.Sprintf("%.2fx", float64(b.wall)/float64(s.wall)), "<= 2 s, <= 128 MiB", yes(b.wall <= 2*time.Second && b.rss <= 128*1024)})
}

// yearNewEvents is how many events the incremental verify row appends.
const yearNewEvents = 10_000

// hasIncrementalVerify tells whether the binary's verify checks only the
// events since the last one it verified: its help says so.
func hasIncrementalVerify() bool {
	out, err := exec.Command(*bin, "verify", "--help").Output()
	if err != nil {
		die(fmt.Errorf("lockledger verify --help: %w", err))
	}
	return strings.Contains(strings.ToLower(string(out)), "incremental")
}

// appendCycles appends n acquire+release cycles to the ledger at root
// through the Go API (unsigned, as its other writers).
func appendCycles(root string, n int) {
	ctx := context.Background()
	l, err := ledger.Open(ctx, root, ledger.MustExist(), ledger.Unsigned())
	if err != nil {
		die(err)
	}
	defer l.Close()
	for range n {
		cycleOn(ctx, l)
	}
}

// warmFile reads path once, so that the first read measured finds it in
// the page cache as the later ones do.
func warmFile(path string) {
	f, err := os.Open(path)
	if err != nil {
		die(err)
	}
	defer f.Close()
	if _, err := io.Copy(io.Discard, f); err != nil {
		die(err)
	}
}

func mib(kib int64) float64 { return float64(kib) / 1024 }

// yearVerdict says whether a read met its targets at the largest size,
// and if not which it missed.
func yearVerdict(b yearSample, growth float64, targeted bool) string {
	var missed []string
	if targeted && b.wall > 100*time.Millisecond {
		missed = append(missed, "time")
	}
	if targeted && growth > 1.5 {
		missed = append(missed, "growth")
	}
	if b.rss > 128*1024 {
		missed = append(missed, "memory")
	}
	if len(missed) == 0 {
		return "yes"
	}
	return "no (" + strings.Join(missed, ", ") + ")"
}

// measureYear runs lockledger args on root once unmeasured, then up to
// yearRuns times within yearBudget. A read whose first run took longer
// than yearBudget is measured by one more run alone: the first may have
// built what the read keeps between runs (metrics' counters, verify's
// verified head), and the file is in the page cache already (see
// warmFile).
func measureYear(root, trust string, args []string) yearSample {
	if t, _ := runYear(root, trust, args); t > yearBudget {
		t, rss := runYear(root, trust, args)
		return yearSample{t, rss, 1}
	}
	var walls []time.Duration
	var s yearSample
	for spent := time.Duration(0); len(walls) < yearRuns && spent < yearBudget; {
		t, rss := runYear(root, trust, args)
		walls, spent, s.rss = append(walls, t), spent+t, max(s.rss, rss)
	}
	s.wall, s.n = median(walls), len(walls)
	return s
}

// runYear runs lockledger args on root, unsigned, with the trust store
// trust, and returns its wall time and peak RSS.
func runYear(root, trust string, args []string) (time.Duration, int64) {
	return runBinCLIIn(*bin, root, trust, append([]string{"--unsigned"}, args...)...)
}
