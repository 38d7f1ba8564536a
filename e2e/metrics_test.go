package e2e

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/ledger"
)

// cliRun runs lockledger on one ledger and checks its exit code.
type cliRun func(t *testing.T, want int, args ...string) clitest.Result

// ledgerCLI runs lockledger on one ledger: to completion, or started.
type ledgerCLI struct {
	run   cliRun
	start func(args ...string) *exec.Cmd
}

// onRoot runs lockledger on the SQLite ledger of root.
func onRoot(root string) ledgerCLI {
	return ledgerCLI{
		run: func(t *testing.T, want int, args ...string) clitest.Result {
			t.Helper()
			return clitest.Must(t, want, root, args...)
		},
		start: func(args ...string) *exec.Cmd { return clitest.Command(context.Background(), root, args...) },
	}
}

// recorded is what the events that timeline prints say, counted.
type recorded struct {
	acquired, heartbeatFailed, lost, blocked map[string]int
	steals, releases, refusals               map[[2]string]int     // lock and reason, result or action
	waited                                   map[[2]string]float64 // lock and what the wait ended in
	verified                                 []string              // results of the ledger's verifies
	events                                   int
}

// timelineCounts counts the events of root as timeline --format jsonl
// prints them.
func timelineCounts(t *testing.T, run cliRun) recorded {
	t.Helper()
	out := run(t, 0, "timeline", "--format", "jsonl").Stdout
	c := recorded{acquired: map[string]int{}, heartbeatFailed: map[string]int{}, lost: map[string]int{}, blocked: map[string]int{},
		steals: map[[2]string]int{}, releases: map[[2]string]int{}, refusals: map[[2]string]int{}, waited: map[[2]string]float64{}}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev struct {
			Type          string  `json:"type"`
			Lock          string  `json:"lock_name"`
			Reason        string  `json:"reason"`
			Result        string  `json:"result"`
			Action        string  `json:"action"`
			LockLost      bool    `json:"lock_lost"`
			WaitedSeconds float64 `json:"waited_seconds"`
			File          string  `json:"file"`
			Until         string  `json:"until"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("timeline line %q: %v", line, err)
		}
		c.events++
		switch events.Type(ev.Type) {
		case events.LockAcquired:
			c.acquired[ev.Lock]++
			c.waited[[2]string{ev.Lock, "acquired"}] += ev.WaitedSeconds
		case events.LockStolen:
			c.steals[[2]string{ev.Lock, ev.Reason}]++
			c.waited[[2]string{ev.Lock, "stolen"}] += ev.WaitedSeconds
		case events.LockReleased:
			c.releases[[2]string{ev.Lock, ev.Result}]++
		case events.HeartbeatFailed:
			c.heartbeatFailed[ev.Lock]++
			if ev.LockLost {
				c.lost[ev.Lock]++
			}
		case events.ActionRefused:
			c.refusals[[2]string{ev.Lock, ev.Action}]++
		case events.AcquireBlocked:
			if ev.Until != "" {
				continue // a waiter joining the queue, not giving up
			}
			c.blocked[ev.Lock]++
			c.waited[[2]string{ev.Lock, "gave_up"}] += ev.WaitedSeconds
		case events.LedgerVerified:
			if ev.File == "" {
				c.verified = append(c.verified, ev.Result)
			}
		}
	}
	return c
}

// metricsScenario records on root, with a real process for each command,
// two holdings of a (one released with failure), a steal of b from its
// active holder and that holder's heartbeat finding the lock lost, and on
// c, still held at the end, a refused release, a refused steal and an
// acquire that waited and gave up; an acquire of e that waited for its
// holder's release and got it; then a signed checkpoint and a verify.
func metricsScenario(t *testing.T, cli ledgerCLI) {
	t.Helper()
	run := cli.run
	self := strconv.Itoa(os.Getpid())
	key := filepath.Join(t.TempDir(), "ops.key")
	run(t, 0, "keygen", "--name", "ops", "-o", key)
	acquire := func(lock, actor string) string {
		return strings.TrimSpace(run(t, 0, "acquire", lock, "--pid", self, "--actor", actor).Stdout)
	}
	rid := acquire("a", "alice")
	run(t, 0, "release", "a", "--request-id", rid)
	rid = acquire("a", "alice")
	run(t, 0, "release", "a", "--request-id", rid, "--result", "failure", "--failure-step", "migrate", "--exit-code", "7")

	rid = acquire("b", "alice")
	run(t, 0, "steal", "b", "--active", "--yes", "--reason", "takeover", "--pid", self, "--actor", "bob", "--request-id", "req_bob")
	run(t, 5, "heartbeat", "b", "--request-id", rid)
	run(t, 0, "release", "b", "--request-id", "req_bob")

	acquire("c", "carol")
	run(t, 5, "release", "c", "--request-id", "req_other", "--actor", "mallory")
	run(t, 3, "steal", "c", "--reason", "mine now", "--request-id", "req_thief", "--pid", self)
	// Long enough that the wait outlasts the ledger's open on a busy machine,
	// which counts against it: a wait over at its first attempt records 0.
	run(t, 3, "acquire", "c", "--wait", "1s", "--pid", self, "--actor", "dave")

	rid = acquire("e", "erin")
	waiter := cli.start("acquire", "e", "--wait", "60s", "--pid", self, "--actor", "frank", "--log-format", "json")
	var got strings.Builder
	waiter.Stdout = &got
	stderr, err := waiter.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := waiter.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() && !strings.Contains(sc.Text(), `"waiting for lock"`) {
	}
	run(t, 0, "release", "e", "--request-id", rid)
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	if err := waiter.Wait(); err != nil {
		t.Fatalf("acquire --wait of e: %v", err)
	}
	run(t, 0, "release", "e", "--request-id", strings.TrimSpace(got.String()))

	run(t, 0, "checkpoint", "--signing-key", key)
	run(t, 0, "verify")
}

// assertMetricsEqualEvents checks every counter and histogram count of s
// against what the events say, lock by lock.
func assertMetricsEqualEvents(t *testing.T, s scrape, c recorded, locks []string) {
	t.Helper()
	for _, lock := range locks {
		eq := func(what string, got float64, want int) {
			t.Helper()
			if got != float64(want) {
				t.Errorf("%s{lock=%q} = %v, the events say %d", what, lock, got, want)
			}
		}
		eq("acquisitions", s.value(t, "lockledger_acquisitions", "lock", lock), c.acquired[lock])
		eq("heartbeat_failures", s.value(t, "lockledger_heartbeat_failures", "lock", lock), c.heartbeatFailed[lock])
		eq("lost_locks", s.value(t, "lockledger_lost_locks", "lock", lock), c.lost[lock])
		for k, n := range c.steals {
			if k[0] == lock {
				eq("steals reason="+k[1], s.value(t, "lockledger_steals", "lock", lock, "reason", k[1]), n)
			}
		}
		for k, n := range c.releases {
			if k[0] == lock {
				eq("releases result="+k[1], s.value(t, "lockledger_releases", "lock", lock, "result", k[1]), n)
			}
		}
		for k, n := range c.refusals {
			if k[0] == lock {
				eq("refusals action="+k[1], s.value(t, "lockledger_refusals", "lock", lock, "action", k[1]), n)
			}
		}
		// Every series of a labelled counter is one the events show.
		for _, fam := range []string{"lockledger_steals", "lockledger_releases", "lockledger_refusals"} {
			total := 0.0
			for _, m := range s.family(fam).GetMetric() {
				if m.GetLabel()[0].GetValue() == lock {
					total += m.GetCounter().GetValue()
				}
			}
			want := 0
			for k, n := range map[string]map[[2]string]int{"lockledger_steals": c.steals, "lockledger_releases": c.releases, "lockledger_refusals": c.refusals}[fam] {
				if k[0] == lock {
					want += n
				}
			}
			eq(fam+" (all series)", total, want)
		}
		holders := s.value(t, "lockledger_lock_holders", "lock", lock)
		steals := 0
		for k, n := range c.steals {
			if k[0] == lock {
				steals += n
			}
		}
		// Every holding begun and no longer held has ended: one
		// observation each.
		hold := s.histogram(t, "lockledger_hold_seconds", "lock", lock)
		eq("hold_seconds_count", float64(hold.GetSampleCount()), c.acquired[lock]+steals-int(holders))
		if b := hold.GetBucket(); len(b) == 0 || b[len(b)-1].GetCumulativeCount() != hold.GetSampleCount() {
			t.Errorf("hold_seconds{lock=%q}: the last bucket does not count every observation: %v", lock, b)
		}
		// Every acquisition, steal and acquire given up is one
		// observation of its wait.
		for outcome, n := range map[string]int{"acquired": c.acquired[lock], "stolen": steals, "gave_up": c.blocked[lock]} {
			wait := s.histogram(t, "lockledger_wait_seconds", "lock", lock, "outcome", outcome)
			eq("wait_seconds_count outcome="+outcome, float64(wait.GetSampleCount()), n)
			if d := wait.GetSampleSum() - c.waited[[2]string{lock, outcome}]; d > 1e-6 || d < -1e-6 {
				t.Errorf("wait_seconds_sum{lock=%q,outcome=%s} = %v, the events say %v", lock, outcome, wait.GetSampleSum(), c.waited[[2]string{lock, outcome}])
			}
		}
	}
}

// TestMetricsCountersEqualTheEvents: after real commands acquire, release,
// steal, refuse, lose and wait for locks, every counter of metrics (in
// both formats, as Prometheus's own parsers read them) equals what the
// events timeline prints say, the hold histogram counts each holding
// that ended, and the gauges show what is held now, the checkpoint and
// the verify.
func TestMetricsCountersEqualTheEvents(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	assertMetricsOf(t, onRoot(root), func() *sql.DB { return clitest.DB(t, root) })
}

// assertMetricsOf runs the scenario on a ledger and checks metrics against
// its events; db reads the same ledger once the scenario made it.
func assertMetricsOf(t *testing.T, cli ledgerCLI, db func() *sql.DB) {
	t.Helper()
	run := cli.run
	metricsScenario(t, cli)
	c := timelineCounts(t, run)
	if c.acquired["a"] != 2 || len(c.steals) != 1 || c.lost["b"] != 1 || len(c.refusals) != 2 || c.blocked["c"] != 1 || len(c.verified) != 1 ||
		c.waited[[2]string{"e", "acquired"}] <= 0 || c.waited[[2]string{"c", "gave_up"}] <= 0 {
		t.Fatalf("the scenario did not record what it should: %+v", c)
	}
	locks := []string{"a", "b", "c", "e"}
	text := run(t, 0, "metrics").Stdout
	om := run(t, 0, "metrics", "--format", "openmetrics").Stdout
	var size int64
	var created string
	if err := db().QueryRow(`SELECT size, created_at FROM checkpoints ORDER BY id DESC LIMIT 1`).Scan(&size, &created); err != nil {
		t.Fatal(err)
	}
	at, err := events.ParseTime(created)
	if err != nil {
		t.Fatal(err)
	}
	for format, s := range map[string]scrape{"text": parseText(t, text), "openmetrics": parseOpenMetrics(t, om)} {
		t.Run(format, func(t *testing.T) {
			if mf := s.family("lockledger_acquisitions"); mf.GetType() != dto.MetricType_COUNTER {
				t.Errorf("lockledger_acquisitions is %v, want a counter", mf.GetType())
			}
			assertMetricsEqualEvents(t, s, c, locks)
			for lock, want := range map[string]float64{"a": 0, "b": 0, "c": 1, "e": 0} {
				if got := s.value(t, "lockledger_lock_held", "lock", lock); got != want {
					t.Errorf("lock_held{lock=%q} = %v, want %v", lock, got, want)
				}
			}
			if m := s.metric(t, "lockledger_lock_holder_info", "lock", "c", "request_id", s.onlyLabel(t, "lockledger_lock_holder_info", "request_id"),
				"actor", "carol", "host_id", s.onlyLabel(t, "lockledger_lock_holder_info", "host_id"), "mode", "exclusive"); m == nil {
				t.Errorf("no lock_holder_info for carol's holding of c")
			}
			if got := s.value(t, "lockledger_events"); got != float64(c.events) {
				t.Errorf("events_total = %v, timeline prints %d events", got, c.events)
			}
			if got := s.value(t, "lockledger_last_verify_success"); got != 1 {
				t.Errorf("last_verify_success = %v, want 1", got)
			}
			if got := s.value(t, "lockledger_checkpoint_size"); got != float64(size) {
				t.Errorf("checkpoint_size = %v, want %d", got, size)
			}
			if age := s.value(t, "lockledger_checkpoint_age_seconds"); age < 0 || age > time.Since(at).Seconds()+1 {
				t.Errorf("checkpoint_age_seconds = %v, the checkpoint was made %v ago", age, time.Since(at))
			}
		})
	}
}

// TestMetricsOnPostgres: the same scenario on a PostgreSQL ledger gives
// the same agreement, and a database without a ledger is exit 6 and is
// left without one.
func TestMetricsOnPostgres(t *testing.T) {
	t.Parallel()
	h := newPGHost(t, "host-a", pgtest.NewDatabase(t))
	cli := ledgerCLI{run: h.must, start: func(args ...string) *exec.Cmd { return h.command(context.Background(), args...) }}
	assertMetricsOf(t, cli, func() *sql.DB { return pgtest.Open(t, h.url) })

	empty := newPGHost(t, "host-b", pgtest.NewDatabase(t))
	empty.must(t, 6, "metrics")
	if n := publicTables(t, empty.url); n != "0" {
		t.Errorf("metrics of an empty database created %s tables", n)
	}
}

// TestMetricsFileAndNoLedger: -o writes a file node_exporter (another
// user) can read, renamed into place, refused inside the root; a root
// with no ledger is exit 6 and stays without one.
func TestMetricsFileAndNoLedger(t *testing.T) {
	t.Parallel()
	empty := filepath.Join(t.TempDir(), "none")
	r := clitest.Must(t, 6, empty, "metrics")
	if r.Stdout != "" {
		t.Errorf("metrics of no ledger printed %q", r.Stdout)
	}
	clitest.Must(t, 6, empty, "metrics", "--listen", "127.0.0.1:0")
	if _, err := os.Stat(empty); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("metrics of no ledger created %s: %v", empty, err)
	}

	root := t.TempDir()
	clitest.Must(t, 0, root, "acquire", "a", "--pid", strconv.Itoa(os.Getpid()))
	out := filepath.Join(t.TempDir(), "lockledger.prom")
	clitest.Must(t, 0, root, "metrics", "-o", out)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if s := parseText(t, string(b)); s.value(t, "lockledger_lock_held", "lock", "a") != 1 {
		t.Errorf("the file does not show a held:\n%s", b)
	}
	if st, err := os.Stat(out); err != nil || st.Mode().Perm()&0o044 != 0o044 {
		t.Errorf("%s: mode %v, want readable by node_exporter (0644 less the umask)", out, st.Mode())
	}
	clitest.Must(t, 2, root, "metrics", "-o", filepath.Join(root, "metrics.prom"))
	clitest.Must(t, 2, root, "metrics", "--format", "json")
	clitest.Must(t, 2, root, "metrics", "--listen", ":0", "-o", out)
	clitest.Must(t, 2, root, "metrics", "--listen", "nowhere")
}

// prometheusAccept is the Accept header Prometheus scrapes with.
const prometheusAccept = "application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"

// TestMetricsListenServesAndStops: --listen answers GET /metrics in the
// format asked for, with the events appended since the last scrape,
// agrees with a single print, and on SIGTERM or SIGINT stops and exits 0.
func TestMetricsListenServesAndStops(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	metricsScenario(t, onRoot(root))
	url, rc := listening(t, root)

	om, ct := get(t, url, prometheusAccept)
	if !strings.HasPrefix(ct, "application/openmetrics-text; version=1.0.0") {
		t.Errorf("Content-Type %q for Prometheus's Accept, want OpenMetrics 1.0.0", ct)
	}
	assertMetricsEqualEvents(t, parseOpenMetrics(t, om), timelineCounts(t, onRoot(root).run), []string{"a", "b", "c", "e"})

	// A new lock and a release after the first scrape are in the next.
	self := strconv.Itoa(os.Getpid())
	rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "d", "--pid", self).Stdout)
	clitest.Must(t, 0, root, "release", "d", "--request-id", rid)
	text, ct := get(t, url, "")
	if !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q without Accept, want the text format", ct)
	}
	s := parseText(t, text)
	assertMetricsEqualEvents(t, s, timelineCounts(t, onRoot(root).run), []string{"a", "b", "c", "d", "e"})
	if got := s.value(t, "lockledger_acquisitions", "lock", "d"); got != 1 {
		t.Errorf("acquisitions{lock=d} = %v after a scrape, want 1", got)
	}
	// The server's incremental fold says what a fresh print says (but
	// for the checkpoint's age, which moves).
	once := clitest.Must(t, 0, root, "metrics").Stdout
	if a, b := withoutAge(text), withoutAge(once); a != b {
		t.Errorf("--listen and a single print differ:\n%s\n---\n%s", a, b)
	}

	if err := rc.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for line := range rc.lines {
		rc.seen = append(rc.seen, line)
	}
	if err := rc.cmd.Wait(); err != nil {
		t.Fatalf("metrics --listen after SIGTERM: %v (want exit 0)\n%s", err, strings.Join(rc.seen, "\n"))
	}
	if !slices.ContainsFunc(rc.seen, func(l string) bool { return strings.Contains(l, "metrics server stopped") }) {
		t.Errorf("no stop logged: %v", rc.seen)
	}
	if _, err := http.Get(url); err == nil {
		t.Errorf("%s still answers after the server stopped", url)
	}

	// SIGINT stops it the same way.
	url, rc = listening(t, root)
	get(t, url, "")
	if err := rc.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for line := range rc.lines {
		rc.seen = append(rc.seen, line)
	}
	if err := rc.cmd.Wait(); err != nil {
		t.Fatalf("metrics --listen after SIGINT: %v (want exit 0)\n%s", err, strings.Join(rc.seen, "\n"))
	}
}

func withoutAge(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "lockledger_checkpoint_age_seconds ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// TestMetricsHostileNamesStayValid: an actor with quotes, a backslash and
// a bidi override (which the command line accepts), and a forged event
// whose lock name and actor carry a newline, terminal escapes and a byte
// that is not UTF-8 (stored as U+FFFD), give output both parsers read,
// with no raw control character and no forged line, and label values as
// termtext shows them (quotes and backslashes kept as they are).
func TestMetricsHostileNamesStayValid(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	const cliActor = `o"brien\admin` + "\u202e" + `} 1`
	clitest.Must(t, 0, root, "acquire", "quoted", "--pid", self, "--actor", cliActor)

	l, err := ledger.Open(context.Background(), root, ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	host := l.Host()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	const (
		forgedLock  = "x\"}\n" + forgedLine + ` 1` + "\x1b[2J\\"
		forgedActor = "bot\x1b]0;pwned\x07\n" + forgedLine + "\xff\u009b31m"
	)
	at := time.Now().UTC()
	db := fixture.RawDB(t, root)
	fixture.Append(t, db, &events.Event{
		Envelope: events.Envelope{Type: events.LockAcquired, At: events.FormatTime(at), LockName: forgedLock,
			RequestID: "req_forged", Actor: forgedActor, HostID: host.ID, PID: 4242},
		Payload: &events.Acquired{TTLSeconds: 3600, Intent: "x", IntentVersion: "1", FencingToken: 2,
			Metadata: map[string]string{}, PIDStart: "1", BootID: host.BootID},
	})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	for _, format := range []string{"text", "openmetrics"} {
		out := clitest.Must(t, 0, root, "metrics", "--format", format).Stdout
		assertPlainText(t, "metrics --format "+format, out)
		s := parseText(t, out)
		if format == "openmetrics" {
			s = parseOpenMetrics(t, out)
		}
		if got := s.value(t, "lockledger_acquisitions", "lock", termtext.Escape(forgedLock)); got != 1 {
			t.Errorf("%s: acquisitions of the forged lock = %v, want 1 under its escaped name\n%s", format, got, out)
		}
		if s.metric(t, "lockledger_lock_holder_info", "lock", "quoted", "request_id", s.holderOf(t, "quoted"), "actor", termtext.Escape(cliActor),
			"host_id", host.ID, "mode", "exclusive") == nil {
			t.Errorf("%s: the actor %q does not come back from the label\n%s", format, cliActor, out)
		}
		if s.metric(t, "lockledger_lock_holder_info", "lock", termtext.Escape(forgedLock), "request_id", "req_forged",
			"actor", termtext.Escape(strings.ToValidUTF8(forgedActor, "\uFFFD")), "host_id", host.ID, "mode", "exclusive") == nil {
			t.Errorf("%s: the forged actor is not shown escaped\n%s", format, out)
		}
		if n := len(s.family("lockledger_lock_held").GetMetric()); n != 2 {
			t.Errorf("%s: %d lock_held series, want 2", format, n)
		}
	}
}

// TestMetricsStateKeptBetweenRuns: a run keeps its fold in the user's
// cache directory (mode 0600) and the next folds from it only the events
// since, to the same metrics as a full fold; a state of another ledger
// is not used, and the log says so; a --state inside the root is bad
// input.
func TestMetricsStateKeptBetweenRuns(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "a", "--pid", self).Stdout)
	clitest.Must(t, 0, root, "metrics")
	kept, err := filepath.Glob(filepath.Join(clitest.TrustDir(root)+"-cache", "lockledger", "metrics", "*.json"))
	if err != nil || len(kept) != 1 {
		t.Fatalf("kept states: %v, %v; want one", kept, err)
	}
	if st, err := os.Stat(kept[0]); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v, %v; want mode 0600", kept[0], st, err)
	}
	clitest.Must(t, 0, root, "acquire", "b", "--pid", self)
	clitest.Must(t, 0, root, "release", "a", "--request-id", rid)
	r := clitest.Must(t, 0, root, "metrics", "--log-level", "debug")
	if !strings.Contains(r.Stderr, "folding from the kept state") {
		t.Errorf("the second run did not fold from the kept state:\n%s", r.Stderr)
	}
	full := clitest.Must(t, 0, root, "metrics", "--full")
	if withoutAge(r.Stdout) != withoutAge(full.Stdout) {
		t.Errorf("from the kept state:\n%s\nfull:\n%s", r.Stdout, full.Stdout)
	}

	// Another ledger's state given with --state: not used, said, replaced.
	other := t.TempDir()
	for _, lock := range []string{"x", "y", "z", "w"} {
		clitest.Must(t, 0, other, "acquire", lock, "--pid", self)
	}
	r = clitest.Must(t, 0, other, "metrics", "--state", kept[0])
	if !strings.Contains(r.Stderr, "not this log's") || !strings.Contains(r.Stderr, "kept for ledger") {
		t.Errorf("another ledger's state, stderr:\n%s", r.Stderr)
	}
	if full := clitest.Must(t, 0, other, "metrics", "--full"); withoutAge(r.Stdout) != withoutAge(full.Stdout) || strings.Contains(r.Stdout, `lock="a"`) {
		t.Errorf("from another ledger's state:\n%s\nfull:\n%s", r.Stdout, full.Stdout)
	}
	r = clitest.Must(t, 2, root, "metrics", "--state", filepath.Join(root, "metrics.json"))
	if r.Stdout != "" {
		t.Errorf("a refused --state printed %q", r.Stdout)
	}
}
