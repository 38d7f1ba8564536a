// Command bench measures lockledger against its references in one run and
// prints a table: each figure, its reference, the ratio and the target.
// `make bench` builds the binary and runs this.
package main

import (
	"bufio"
	"cmp"
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/lease"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/store/sqlite"
	"github.com/lockledger/lockledger/witness"
)

var (
	bin     = flag.String("bin", "bin/lockledger", "lockledger binary")
	pairs   = flag.Int("pairs", 40, "alternated CLI pairs per comparison")
	libTime = flag.Duration("lib-time", 3*time.Second, "time per library measurement round")
	nEvents = flag.Int("events", 1_000_000, "events in the scale ledger (0 skips the scale rows)")
	only    = flag.String("only", "", "comma-separated row groups to run: cli,baseline,lib,clients,scale,year,contention,pg,pgclients,page,copies")
	// A contention worker is this program run again with these flags,
	// given separately so that no value (a URL has colons) needs escaping.
	workerCycles   = flag.Int("worker-cycles", 0, "internal: run this many contention cycles as a worker and exit")
	workerRoot     = flag.String("worker-root", "", "internal: the worker's root")
	workerLock     = flag.String("worker-lock", "", "internal: the lock the worker cycles on")
	workerDatabase = flag.String("worker-database", "", "internal: the worker's PostgreSQL ledger URL (none: SQLite in its root)")
	keep           = flag.Bool("keep", false, "keep the temporary roots (e.g. the scale ledger) and print where they are")
)

type row struct {
	name, figure, reference, ratio, target, verdict string
}

var rows []row

// vsFlock is a CLI row's figure as a ratio to flock(1), by row name.
var vsFlock = map[string]string{}

func add(r row) {
	rows = append(rows, r)
	fmt.Fprintf(os.Stderr, "  %s: %s (reference %s) %s\n", r.name, r.figure, r.reference, r.ratio)
}

func want(group string) bool {
	if *only == "" {
		return true
	}
	for _, g := range strings.Split(*only, ",") {
		if g == group {
			return true
		}
	}
	return false
}

func main() {
	flag.Parse()
	if *measured {
		runMeasured(flag.Args())
	}
	if *workerCycles > 0 {
		runWorker(*workerRoot, *workerLock, *workerDatabase, *workerCycles)
		return
	}
	if *generateOnly {
		generateYear()
		return
	}
	abs, err := filepath.Abs(*bin)
	if err != nil {
		die(err)
	}
	*bin = abs
	if _, err := os.Stat(*bin); err != nil {
		die(fmt.Errorf("%s: build it first (make build): %w", *bin, err))
	}
	tmp, err := os.MkdirTemp(benchDir(), "lockledger-bench-")
	if err != nil {
		die(err)
	}
	if *keep {
		fmt.Fprintf(os.Stderr, "keeping the roots in %s\n", tmp)
	} else {
		defer cleanup(func() { os.RemoveAll(tmp) })()
	}
	*bin = stage(*bin, filepath.Join(tmp, "bin"), "lockledger")
	start := time.Now()
	if want("cli") {
		fmt.Fprintln(os.Stderr, "CLI against flock(1):")
		benchCLI(tmp)
	}
	if *baseline != "" && want("baseline") {
		fmt.Fprintln(os.Stderr, "CLI against -baseline:")
		benchBaseline(tmp)
	}
	if want("lib") {
		fmt.Fprintln(os.Stderr, "Go library against the raw durable commit rate:")
		benchLibrary(tmp)
	}
	if (want("scale") || want("copies")) && *nEvents > 0 {
		fmt.Fprintf(os.Stderr, "Scale, on a generated %d-event ledger:\n", *nEvents)
		benchScale(tmp)
	}
	if want("lib") || want("clients") {
		fmt.Fprintln(os.Stderr, "SQLite, clients of one ledger on distinct locks against the raw commit rate:")
		sqliteClients(tmp)
	}
	if want("year") {
		fmt.Fprintf(os.Stderr, "A year in the bench: each audit read at %s events:\n", *yearSizes)
		benchYear(tmp)
	}
	if want("contention") {
		fmt.Fprintln(os.Stderr, "Contention, 8 processes x 200 cycles:")
		benchContention(tmp)
	}
	if want("pg") || want("pgclients") {
		fmt.Fprintln(os.Stderr, "PostgreSQL, each against its reference on the same server:")
		benchPostgres(tmp)
	}
	if want("page") {
		fmt.Fprintln(os.Stderr, "The timeline page in a browser:")
		benchPage(tmp)
	}
	print(time.Since(start))
}

func benchDir() string {
	if d := os.Getenv("LOCKLEDGER_BENCH_DIR"); d != "" {
		return d
	}
	return "" // os.TempDir
}

func print(took time.Duration) {
	host, _ := os.Hostname()
	fmt.Printf("\nlockledger benchmarks — %s, %s, %d CPUs, took %s\n\n", time.Now().UTC().Format(time.RFC3339), host, numCPU(), took.Round(time.Second))
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "| measurement\t| lockledger\t| reference\t| ratio\t| vs flock\t| target\t| met\t|")
	fmt.Fprintln(tw, "|---\t|---\t|---\t|---\t|---\t|---\t|---\t|")
	for _, r := range rows {
		fl, ok := vsFlock[r.name]
		if !ok {
			fl = "-"
		}
		fmt.Fprintf(tw, "| %s\t| %s\t| %s\t| %s\t| %s\t| %s\t| %s\t|\n", r.name, r.figure, r.reference, r.ratio, fl, r.target, r.verdict)
	}
	tw.Flush()
	printCosts()
}

func numCPU() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return strings.Count(string(b), "processor\t:")
}

// cleanups are what a run must undo however it ends (its temporary
// directory, a PostgreSQL cluster it started): die runs those not yet run.
var cleanups struct {
	sync.Mutex
	fs []*func()
}

// cleanup registers f for die and returns the function that runs it now
// instead (for a defer), once.
func cleanup(f func()) (now func()) {
	cleanups.Lock()
	defer cleanups.Unlock()
	cleanups.fs = append(cleanups.fs, &f)
	return func() {
		cleanups.Lock()
		i := slices.Index(cleanups.fs, &f)
		if i >= 0 {
			cleanups.fs = slices.Delete(cleanups.fs, i, i+1)
		}
		cleanups.Unlock()
		if i >= 0 {
			f()
		}
	}
}

func die(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	cleanups.Lock()
	fs := slices.Clone(cleanups.fs)
	cleanups.fs = nil
	cleanups.Unlock()
	for _, f := range slices.Backward(fs) {
		(*f)()
	}
	os.Exit(1)
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}

// --- CLI ---

func execCommand(env []string, name string, args ...string) *exec.Cmd {
	c := exec.Command(name, args...)
	c.Env = env
	return c
}

func timeCmd(env []string, name string, args ...string) time.Duration {
	return runCmd(env, name, args...).wall
}

// runCmd runs a command to its end and says what it cost.
func runCmd(env []string, name string, args ...string) sample {
	c := execCommand(env, name, args...)
	s := time.Now()
	if err := c.Run(); err != nil {
		die(fmt.Errorf("%s %v: %w", name, args, err))
	}
	return usage(c.ProcessState, time.Since(s))
}

// median is the middle of xs (the upper one of an even count); xs is left
// as it is.
func median[T cmp.Ordered](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

// cliEnv is the environment the CLI rows run in: a trust store of their
// own in trustDir (the user's is not written) and none of the caller's
// LOCKLEDGER_ settings (LOCKLEDGER_UNSIGNED=1 would make the signed rows
// unsigned).
func cliEnv(trustDir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LOCKLEDGER_") {
			env = append(env, kv)
		}
	}
	return append(env, "NO_COLOR=1", "LOCKLEDGER_TRUST_DIR="+trustDir)
}

// benchCLI times every CLI row alternated, in one loop, with the floor
// (internal/cmd/floor: what `run NAME -- true` must do, on our stack), the
// floor that also signs each head, a static hello-world and flock(1), so
// that all of them see the same load; each CLI row is a ratio to the
// floor, flock beside it.
func benchCLI(tmp string) {
	flockBin, err := exec.LookPath("flock")
	if err != nil {
		die(fmt.Errorf("flock(1) from util-linux is the reference: %w", err))
	}
	floor, hello := floorBins(tmp, filepath.Join(tmp, "bin"))
	plain, signed := floorSetup(floor, filepath.Join(tmp, "floor"))
	base := cliEnv(filepath.Join(tmp, "trust"))
	env := append(slices.Clip(base), "LOCKLEDGER_ROOT="+filepath.Join(tmp, "cli"))
	uenv := append(slices.Clip(base), "LOCKLEDGER_ROOT="+filepath.Join(tmp, "cli-unsigned"))
	lockFile := filepath.Join(tmp, "flock.lock")
	timeCmd(env, *bin, "--log-level", "error", "run", "warm", "--", "true") // create the ledger and the key once
	timeCmd(uenv, *bin, "--log-level", "error", "--unsigned", "run", "warm", "--", "true")
	cycle := func() sample {
		s := time.Now()
		c := execCommand(env, *bin, "--log-level", "error", "acquire", "two-step", "--pid", strconv.Itoa(os.Getpid()))
		out, err := c.Output()
		if err != nil {
			die(fmt.Errorf("acquire: %w", err))
		}
		acq := usage(c.ProcessState, time.Since(s))
		return acq.plus(runCmd(env, *bin, "--log-level", "error", "release", "two-step", "--request-id", strings.TrimSpace(string(out))))
	}
	const (
		runSigned = iota
		runUnsigned
		acqRel
		status
		help
		floorPlain
		floorSigned
		helloWorld
		flockCall
		nMeasures
	)
	measure := [nMeasures]func() sample{
		runSigned: func() sample { return runCmd(env, *bin, "--log-level", "error", "run", "bench", "--", "true") },
		runUnsigned: func() sample {
			return runCmd(uenv, *bin, "--log-level", "error", "--unsigned", "run", "bench", "--", "true")
		},
		acqRel:      cycle,
		status:      func() sample { return runCmd(env, *bin, "--log-level", "error", "status", "bench") },
		help:        func() sample { return runCmd(env, *bin, "--help") },
		floorPlain:  func() sample { return runCmd(base, floor, plain...) },
		floorSigned: func() sample { return runCmd(base, floor, signed...) },
		helloWorld:  func() sample { return runCmd(base, hello) },
		flockCall:   func() sample { return runCmd(base, flockBin, "-n", lockFile, "true") },
	}
	var t [nMeasures][]sample
	for i := 0; i < *pairs; i++ {
		for k := 0; k < nMeasures; k++ {
			m := (i + k) % nMeasures // each starts a round in turn
			t[m] = append(t[m], measure[m]())
		}
	}
	var med [nMeasures]time.Duration
	var cost [nMeasures]sample
	for m := range t {
		cost[m] = medianSample(t[m])
		med[m] = cost[m].wall
	}
	costFloor, pageCost = cost[floorPlain], freshPageCost()
	for _, c := range []struct {
		m    int
		name string
	}{
		{runSigned, "`run NAME -- true`"}, {runUnsigned, "`run --unsigned NAME -- true`"}, {acqRel, "`acquire` + `release` (both processes)"},
		{status, "`status NAME`"}, {help, "`--help`"}, {floorPlain, "the floor"}, {floorSigned, "the floor + signing"},
		{helloWorld, "a static Go hello-world"}, {flockCall, "`flock -n FILE true`"},
	} {
		costs = append(costs, costRow{c.name, cost[c.m]})
	}
	fl, fk := med[floorPlain], med[flockCall]
	x := func(m int) float64 { return float64(med[m]) / float64(fl) }
	flockCol := func(m int) string { return fmt.Sprintf("%.2fx", float64(med[m])/float64(fk)) }
	n := strconv.Itoa(*pairs)
	floorRef := ms(fl)
	for _, r := range []struct {
		m      int
		name   string
		target float64 // of the floor; 0 reports
	}{
		{runSigned, "`run NAME -- true` (signed, the default) vs the floor", 1.3},
		{runUnsigned, "`run --unsigned NAME -- true` vs the floor", 0},
		{acqRel, "`acquire` + `release` (two invocations, signed) vs the floor", 2.4},
		{status, "`status NAME` vs the floor", 0.9},
		{help, "`--help` vs the floor", 0.5},
		{floorSigned, "the floor + per commit one Ed25519 sign and one head file written, fsynced, renamed (directory fsynced) vs the floor", 0},
		{helloWorld, "a static Go hello-world vs the floor", 0},
		{flockCall, "`flock -n FILE true` vs the floor", 0},
	} {
		target, verdict := "report", "-"
		if r.target > 0 {
			target, verdict = fmt.Sprintf("<= %.1fx", r.target), yes(x(r.m) <= r.target)
		}
		name := r.name + " (median of " + n + " alternated rounds)"
		vsFlock[name] = flockCol(r.m)
		add(row{name: name, figure: ms(med[r.m]), reference: floorRef, ratio: fmt.Sprintf("%.2fx", x(r.m)), target: target, verdict: verdict})
	}
	sign := med[runSigned] - med[runUnsigned]
	floorSign := med[floorSigned] - fl
	add(row{name: "what signing by default costs: `run` minus `run --unsigned` (ms, and in floors) vs what signing adds to the floor (floor + signing minus the floor)",
		figure: fmt.Sprintf("%s (%.2fx)", ms(sign), float64(sign)/float64(fl)), reference: fmt.Sprintf("%s (%.2fx)", ms(floorSign), float64(floorSign)/float64(fl)),
		ratio: fmt.Sprintf("%.2fx", float64(sign)/float64(floorSign)), target: "report", verdict: "-"})
	fmt.Fprintf(os.Stderr, "  the floor: %s; flock: %s (floor = %.2fx flock)\n", ms(fl), ms(fk), float64(fl)/float64(fk))
}

// --- library ---

func benchLibrary(tmp string) {
	ctx := context.Background()
	root := filepath.Join(tmp, "lib")
	l, err := ledger.Open(ctx, root, ledger.Unsigned())
	if err != nil {
		die(err)
	}
	defer l.Close()
	db, err := sql.Open("sqlite", sqlite.DSN(filepath.Join(tmp, "raw.db"), ledger.DefaultBusyTimeout))
	if err != nil {
		die(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB)`); err != nil {
		die(err)
	}
	body := make([]byte, 600)
	idx, err := indexedRaw(ctx, l, filepath.Join(tmp, "raw-indexed.db"))
	if err != nil {
		die(err)
	}
	defer idx.db.Close()
	commit := func() {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			die(err)
		}
		if _, err := tx.Exec(`INSERT INTO t (v) VALUES (?)`, body); err != nil {
			die(err)
		}
		if err := tx.Commit(); err != nil {
			die(err)
		}
	}
	cycle := func() { cycleOn(ctx, l) }
	// The same cycles on a ledger whose writer signs checkpoints on its
	// own (default policy) and copies each to a witness file.
	signed, err := signedLedger(ctx, tmp)
	if err != nil {
		die(err)
	}
	defer signed.Close()
	signedCycle := func() { cycleOn(ctx, signed) }
	// Alternate short rounds so that all see the same disk weather.
	var lib, raw, rawIdx, sig []float64
	for i := 0; i < 6; i++ {
		lib = append(lib, rate(cycle, *libTime/6))
		raw = append(raw, rate(func() { commit(); commit() }, *libTime/6))
		rawIdx = append(rawIdx, rate(func() { idx.commit(ctx); idx.commit(ctx) }, *libTime/6))
		sig = append(sig, rate(signedCycle, *libTime/6))
	}
	ml, mr, mi, ms := median(lib), median(raw), median(rawIdx), median(sig)
	add(row{"Go API acquire+release cycles/s vs raw 2-commit cycles/s, one row of the events table's columns and indexes per commit (same settings, same file system)",
		fmt.Sprintf("%.0f/s", ml), fmt.Sprintf("%.0f/s", mi), fmt.Sprintf("%.0f%%", 100*ml/mi), ">= 60%", yes(ml/mi >= 0.6)})
	add(row{"Go API acquire+release cycles/s vs raw 2-commit cycles/s, one 600-byte row in a table without indexes",
		fmt.Sprintf("%.0f/s", ml), fmt.Sprintf("%.0f/s", mr), fmt.Sprintf("%.0f%%", 100*ml/mr), "report", "-"})
	var n int64
	_ = openSQLite(signed).QueryRow(`SELECT count(*) FROM checkpoints`).Scan(&n)
	add(row{fmt.Sprintf("Go API cycles/s with automatic checkpoints (every %d events or %s, one witness file; %d signed) vs without",
		ledger.DefaultCheckpointEvery, ledger.DefaultCheckpointInterval, n),
		fmt.Sprintf("%.0f/s", ms), fmt.Sprintf("%.0f/s", ml), fmt.Sprintf("%.0f%%", 100*ms/ml), ">= 90%", yes(ms/ml >= 0.9)})
}

// rawEvents is the raw reference with the ledger's own events table: the
// table and its indexes copied from the ledger's schema (so that an index
// change moves both), one row like an event's per commit.
type rawEvents struct {
	db  *sql.DB
	seq atomic.Int64
}

// openSQLite is a pool of the bench's own on l's database (left open
// until the bench exits).
func openSQLite(l *ledger.Ledger) *sql.DB {
	db, err := sql.Open("sqlite", sqlite.DSN(l.Source(), ledger.DefaultBusyTimeout))
	if err != nil {
		die(err)
	}
	return db
}

func indexedRaw(ctx context.Context, l *ledger.Ledger, path string) (*rawEvents, error) {
	db, err := sql.Open("sqlite", sqlite.DSN(path, ledger.DefaultBusyTimeout))
	if err != nil {
		return nil, err
	}
	rows, err := openSQLite(l).QueryContext(ctx, `SELECT sql FROM sqlite_master WHERE tbl_name = 'events' AND type IN ('table', 'index') AND sql IS NOT NULL ORDER BY type DESC`)
	if err != nil {
		return nil, err
	}
	var ddl []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		ddl = append(ddl, s)
	}
	rows.Close()
	if len(ddl) < 2 {
		return nil, fmt.Errorf("bench: the ledger's events table has no indexes to copy (%d statements)", len(ddl))
	}
	for _, s := range ddl {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return nil, fmt.Errorf("%s: %w", s, err)
		}
	}
	return &rawEvents{db: db}, nil
}

func (r *rawEvents) commit(ctx context.Context) {
	seq := r.seq.Add(1)
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		die(err)
	}
	id := fmt.Sprintf("%026d", seq)
	typ := "lock_acquired"
	if seq%2 == 0 {
		typ = "lock_released"
	}
	hash := fmt.Sprintf("%064x", seq)
	if _, err := tx.ExecContext(ctx, `INSERT INTO events (seq, event_id, type, lock_name, request_id, actor, at, body, prev_hash, hash)
		VALUES (?,?,?,?,?,?,?,?,?,?)`, seq, id, typ, "bench", "req-"+id, "bench",
		time.Now().UTC().Format(time.RFC3339Nano), make([]byte, 600), hash, hash); err != nil {
		die(err)
	}
	if err := tx.Commit(); err != nil {
		die(err)
	}
}

// cycleOn is one Go API acquire and release of lock "bench" on l.
func cycleOn(ctx context.Context, l *ledger.Ledger) {
	a, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "bench", Identity: ledger.Identity{Actor: "bench"}})
	if err != nil {
		die(err)
	}
	if _, err := l.Release(ctx, ledger.ReleaseRequest{Lock: "bench", Identity: ledger.Identity{RequestID: a.RequestID, Actor: "bench"}}); err != nil {
		die(err)
	}
}

// rate calls f for d and returns its calls per second.
func rate(f func(), d time.Duration) float64 {
	n, s := 0, time.Now()
	for time.Since(s) < d {
		f()
		n++
	}
	return float64(n) / time.Since(s).Seconds()
}

// signedLedger opens a ledger at tmp/lib-signed with a fresh key, its
// checkpoints copied to tmp/witness.
func signedLedger(ctx context.Context, tmp string) (*ledger.Ledger, error) {
	skey, _, err := checkpoint.GenerateKey("bench")
	if err != nil {
		return nil, err
	}
	s, err := checkpoint.NewSigner(skey)
	if err != nil {
		return nil, err
	}
	return ledger.Open(ctx, filepath.Join(tmp, "lib-signed"), ledger.WithSigner(s), ledger.WithWitnesses(witness.New([]string{filepath.Join(tmp, "witness")}, 0, nil)))
}

// --- contention ---

// runWorker runs n acquire/release cycles on lock and prints each
// acquire's latency in nanoseconds, one a line. Its host id is
// LOCKLEDGER_HOST_ID's, which its parent sets.
func runWorker(root, lock, database string, n int) {
	ctx := context.Background()
	var opts []ledger.Option
	if database != "" {
		opts = append(opts, ledger.WithDatabase(database))
	}
	l, err := ledger.Open(ctx, root, append(opts, ledger.Unsigned())...)
	if err != nil {
		die(err)
	}
	defer l.Close()
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	for i := 0; i < n; i++ {
		s := time.Now()
		a, err := lease.Wait(ctx, l, ledger.AcquireRequest{Lock: lock, Identity: ledger.Identity{Actor: "worker"}}, time.Minute, nil)
		if err != nil {
			die(err)
		}
		fmt.Fprintln(w, time.Since(s).Nanoseconds())
		if _, err := l.Release(ctx, ledger.ReleaseRequest{Lock: lock, Identity: ledger.Identity{RequestID: a.RequestID, Actor: "worker"}}); err != nil {
			die(err)
		}
	}
}

func benchContention(tmp string) {
	for _, shared := range []bool{false, true} {
		root := filepath.Join(tmp, fmt.Sprintf("contention-%v", shared))
		if l, err := ledger.Open(context.Background(), root, ledger.Unsigned()); err == nil {
			l.Close()
		}
		var ws []workerSpec
		for i := 0; i < 8; i++ {
			lock := "shared"
			if !shared {
				lock = fmt.Sprintf("lock-%d", i)
			}
			ws = append(ws, workerSpec{root: root, lock: lock, cycles: 200})
		}
		lat, took := runWorkers(ws)
		name := "8 distinct locks"
		if shared {
			name = "1 shared lock"
		}
		add(row{"contention, " + name + ": cycles/s, acquire p50 / p99", contentionFigure(lat, took), "-", "-", "report", "-"})
	}
}

// workerSpec is one contention worker process.
type workerSpec struct {
	root, lock, database string
	host                 string // LOCKLEDGER_HOST_ID; "" keeps ours
	cycles               int
}

// runWorkers runs the workers at once and returns every acquire latency
// they measured, sorted, and the wall time until the last one finished.
func runWorkers(ws []workerSpec) ([]time.Duration, time.Duration) {
	self, err := os.Executable()
	if err != nil {
		die(err)
	}
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	start := time.Now()
	for _, w := range ws {
		c := exec.Command(self, "-worker-cycles", strconv.Itoa(w.cycles), "-worker-root", w.root,
			"-worker-lock", w.lock, "-worker-database", w.database)
		c.Env = os.Environ()
		if w.host != "" {
			c.Env = append(c.Env, ledger.HostIDEnv+"="+w.host)
		}
		c.Stderr = os.Stderr
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := c.Output()
			if err != nil {
				die(fmt.Errorf("worker: %w", err))
			}
			var mine []time.Duration
			for _, f := range strings.Fields(string(out)) {
				n, _ := strconv.ParseInt(f, 10, 64)
				mine = append(mine, time.Duration(n))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	took := time.Since(start)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat, took
}

// contentionFigure: cycles/s over the whole run, acquire p50 / p99.
func contentionFigure(lat []time.Duration, took time.Duration) string {
	if len(lat) == 0 {
		return "no cycles"
	}
	p := func(q float64) time.Duration { return lat[int(q*float64(len(lat)-1))] }
	return fmt.Sprintf("%.0f/s, %s / %s", float64(len(lat))/took.Seconds(), ms(p(0.5)), ms(p(0.99)))
}
