package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/ledger"
)

// pgHost runs the CLI as one host of a fleet sharing the ledger at url: a
// host id of its own and a root of its own for its lock files.
type pgHost struct {
	id, root, url string
	trust         string // another host's trust store ("": the test's)
}

func newPGHost(t *testing.T, id, url string) *pgHost {
	return &pgHost{id: id, root: t.TempDir(), url: url}
}

// env is what makes the CLI this host on the ledger of many hosts.
func (h *pgHost) env() []string {
	env := []string{"LOCKLEDGER_DATABASE_URL=" + h.url, ledger.HostIDEnv + "=" + h.id}
	if h.trust != "" {
		env = append(env, "LOCKLEDGER_TRUST_DIR="+h.trust)
	}
	return env
}

func (h *pgHost) command(ctx context.Context, args ...string) *exec.Cmd {
	c := clitest.Command(ctx, h.root, args...)
	c.Env = append(c.Env, h.env()...)
	return c
}

func (h *pgHost) run(t *testing.T, args ...string) clitest.Result {
	t.Helper()
	return clitest.RunWith(t, h.root, h.env(), "", args...)
}

func (h *pgHost) must(t *testing.T, want int, args ...string) clitest.Result {
	t.Helper()
	r := h.run(t, args...)
	if r.Code != want {
		t.Fatalf("%s: lockledger %s: exit %d, want %d\nstdout: %s\nstderr: %s", h.id, strings.Join(args, " "), r.Code, want, r.Stdout, r.Stderr)
	}
	return r
}

func pgTypes(t *testing.T, url string) map[string]int {
	t.Helper()
	rows, err := pgtest.Open(t, url).QueryContext(context.Background(), `SELECT type FROM events ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var ty string
		if err := rows.Scan(&ty); err != nil {
			t.Fatal(err)
		}
		out[ty]++
	}
	return out
}

func TestPostgresSixteenHostsRaceForOneLockOneWinnerEachTrial(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	const procs = 16
	trials := 3
	if stressed() {
		trials = 12
	}
	hosts := make([]*pgHost, procs)
	for i := range hosts {
		hosts[i] = newPGHost(t, fmt.Sprintf("host-%02d", i), url)
	}
	for trial := range trials {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		results := make([]clitest.Result, procs)
		var wg sync.WaitGroup
		for i, h := range hosts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := h.command(ctx, "acquire", "contended", "--ttl", "60s", "--actor", h.id)
				var out, errb bytes.Buffer
				c.Stdout, c.Stderr = &out, &errb
				_ = c.Run()
				results[i] = clitest.Result{Code: c.ProcessState.ExitCode(), Stdout: out.String(), Stderr: errb.String()}
			}()
		}
		wg.Wait()
		cancel()
		winner := -1
		for i, r := range results {
			switch r.Code {
			case 0:
				if winner >= 0 {
					t.Fatalf("trial %d: %s and %s both acquired", trial, hosts[winner].id, hosts[i].id)
				}
				winner = i
			case 3:
			default:
				t.Fatalf("trial %d: %s: exit %d\n%s", trial, hosts[i].id, r.Code, r.Stderr)
			}
		}
		if winner < 0 {
			t.Fatalf("trial %d: no winner", trial)
		}
		rid := strings.TrimSpace(results[winner].Stdout)
		if _, err := os.Stat(filepath.Join(hosts[winner].root, "locks", "contended.lock")); err != nil {
			t.Errorf("trial %d: the winner's host has no lock file: %v", trial, err)
		}
		hosts[winner].must(t, 0, "release", "contended", "--request-id", rid)
		if _, err := os.Stat(filepath.Join(hosts[winner].root, "locks", "contended.lock")); !os.IsNotExist(err) {
			t.Errorf("trial %d: the winner's lock file outlived the release: %v", trial, err)
		}
	}
	if got := pgTypes(t, url); got["lock_acquired"] != trials || got["lock_released"] != trials {
		t.Errorf("events: got %v, want %d acquired and released", got, trials)
	}
	hosts[0].must(t, 0, "verify")
}

func TestPostgresManyRunWaitersOnThreeHostsNeverOverlap(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	hosts := []*pgHost{newPGHost(t, "alpha", url), newPGHost(t, "beta", url), newPGHost(t, "gamma", url)}
	// Sixteen waiters queue on every host at once as well as 32 do;
	// make stress runs 32.
	procs := 16
	if stressed() {
		procs = 32
	}
	logFile := filepath.Join(t.TempDir(), "tenures")
	child := tenureScript("0.02")
	var wg sync.WaitGroup
	errs := make([]string, procs)
	for i := range procs {
		h := hosts[i%len(hosts)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			c := h.command(ctx, "run", "shared", "--wait", "180s", "--ttl", "120", "--actor", fmt.Sprintf("%s-%d", h.id, i), "--", "sh", "-c", child)
			c.Env = append(c.Env, "LOG="+logFile)
			var errb bytes.Buffer
			c.Stderr = &errb
			if err := c.Run(); err != nil {
				errs[i] = fmt.Sprintf("%s waiter %d: %v\n%s", h.id, i, err, errb.String())
			}
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			t.Error(e)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	for _, p := range intervalProblems(readTenures(t, logFile, procs)) {
		t.Error(p)
	}
	assertNoOverlaps(t, pgtest.Open(t, url))
	if got := pgTypes(t, url); got["lock_acquired"] != procs || got["lock_released"] != procs || got["lock_stolen"] != 0 {
		t.Errorf("events: got %v, want %d acquired and released, no steals", got, procs)
	}
	for _, h := range hosts {
		h.must(t, 0, "verify")
	}
}

// Writers killed with SIGKILL at any point, inside their transaction or
// not, leave the chain whole: the server rolls back what did not commit,
// and the next writers judge the killed holders dead.
func TestPostgresWritersKilledMidTransactionLeaveNoGap(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	hosts := []*pgHost{newPGHost(t, "k1", url), newPGHost(t, "k2", url)}
	hosts[0].must(t, 0, "run", "init", "--", "true")
	reader := fixture.OpenPostgres(t, url, ledger.ReadOnly())
	db := pgtest.Open(t, url)
	count := func() int {
		var n int
		if err := db.QueryRowContext(context.Background(), `SELECT count(*) FROM events`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Each round kills six writers at once, at whatever point each was:
	// two rounds in make test, more under make stress.
	rounds := 2
	if stressed() {
		rounds = 8
	}
	for round := range rounds {
		var cmds []*exec.Cmd
		for i := range 6 {
			h := hosts[i%2]
			// acquire and release only: no `run`, whose command would leave
			// this process group.
			script := fmt.Sprintf(`while :; do rid=$("$LL" acquire lock-%d --wait 30s) && "$LL" release lock-%d --request-id "$rid"; done`, i%3, i%3)
			c := exec.Command("sh", "-c", script)
			c.Env = append(clitest.Env(h.root, h.env()...), "LL="+clitest.Bin())
			c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			cmds = append(cmds, c)
		}
		// Let the writers get well under way, then kill every process of
		// every group at once.
		base := count()
		for count() < base+40 {
			time.Sleep(20 * time.Millisecond)
		}
		for _, c := range cmds {
			syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		}
		for _, c := range cmds {
			c.Wait()
		}
		t.Logf("round %d: %d events", round, count())
	}
	assertNoOverlaps(t, db)
	// A release killed before its commit left the lock held and its file
	// gone, as on SQLite (e2e/crash_test.go): project settles each host's
	// files, and refuses if the log itself is damaged.
	for _, h := range hosts {
		h.must(t, 0, "project")
	}
	for _, h := range hosts {
		h.must(t, 0, "verify")
	}
	// The killed waiters' places in the queues are not probed from the other
	// host: they lapse within events.WaiterTTL of their last renewal, and
	// until then a free lock is theirs, not a caller's that does not wait.
	for i := range 3 {
		lock := fmt.Sprintf("lock-%d", i)
		deadline := time.Now().Add(3 * events.WaiterTTL)
		for {
			q, err := reader.Queue(context.Background(), lock)
			if err != nil {
				t.Fatal(err)
			}
			if len(q) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d killed waiters still queued after %s", lock, len(q), 3*events.WaiterTTL)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// A holder killed while holding is dead to its own host, which takes
	// the lock over (another host judges it by its TTL alone: held).
	for i := range 3 {
		lock := fmt.Sprintf("lock-%d", i)
		if r := hosts[0].run(t, "run", lock, "--", "true"); r.Code != 0 {
			if r.Code != 3 || !strings.Contains(r.Stderr, "on k2") {
				t.Fatalf("k1: run %s: exit %d\n%s", lock, r.Code, r.Stderr)
			}
			hosts[1].must(t, 0, "run", lock, "--", "true")
		}
	}
	hosts[1].must(t, 0, "verify")
}

// The README's roles: a writer may only add events, an auditor only read.
func TestPostgresRolesWriterAppendsAuditorReads(t *testing.T) {
	t.Parallel()
	roles := newREADMERoles(t)
	w := newPGHost(t, "writer-host", roles.writer)
	rid := strings.TrimSpace(w.must(t, 0, "acquire", "job").Stdout)
	w.must(t, 0, "release", "job", "--request-id", rid)
	w.must(t, 0, "run", "job", "--", "true")
	wdb := openSQL(t, roles.writer)
	for _, q := range []string{`UPDATE events SET actor = 'mallory'`, `DELETE FROM events`, `TRUNCATE events`,
		`DROP TRIGGER events_no_update ON events`, `ALTER TABLE events DISABLE TRIGGER ALL`} {
		if _, err := wdb.Exec(q); err == nil {
			t.Errorf("writer: %s was allowed", q)
		}
	}
	a := newPGHost(t, "auditor-host", roles.auditor)
	r := a.must(t, 0, "verify")
	if !strings.Contains(r.Stdout, "verify: OK") {
		t.Errorf("auditor's verify: %s", r.Stdout)
	}
	a.must(t, 0, "timeline")
	if r := a.run(t, "acquire", "job"); r.Code == 0 {
		t.Errorf("auditor acquired a lock")
	}
	newPGHost(t, "owner-host", roles.owner).must(t, 0, "verify")
}

// Lock files are each host's projection of the locks it holds: another
// host's project leaves them (and their targets' paths) alone, its verify
// checks only its own, and the holder's host rebuilds its own.
func TestPostgresEachHostProjectsAndChecksItsOwnLockFiles(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	a, b := newPGHost(t, "host-a", url), newPGHost(t, "host-b", url)
	target := filepath.Join(t.TempDir(), "deploy.lock")
	rid := strings.TrimSpace(a.must(t, 0, "acquire", "deploy", "--file", "beads:"+target).Stdout)
	mine := filepath.Join(a.root, "locks", "deploy.lock")
	if _, err := os.Stat(mine); err != nil {
		t.Fatalf("the holder's lock file: %v", err)
	}
	for _, args := range [][]string{{"verify"}, {"project"}, {"verify"}} {
		b.must(t, 0, args...)
	}
	if _, err := os.Stat(filepath.Join(b.root, "locks", "deploy.lock")); !os.IsNotExist(err) {
		t.Errorf("host-b's project wrote a file for host-a's lock: %v", err)
	}
	st := b.must(t, 0, "status", "deploy")
	if !strings.Contains(st.Stdout, "held") || !strings.Contains(st.Stdout, "host-a") {
		t.Errorf("host-b's status: %s", st.Stdout)
	}
	// host-a loses its files; its verify says so, its project puts them back.
	if err := os.Remove(mine); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(target); err != nil {
		t.Fatal(err)
	}
	if r := a.run(t, "verify"); r.Code != 1 || !strings.Contains(r.Stdout, "lock_file_missing") {
		t.Errorf("host-a's verify with its file gone: exit %d\n%s", r.Code, r.Stdout)
	}
	b.must(t, 0, "verify")
	a.must(t, 0, "project")
	for _, p := range []string{mine, target} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("after host-a's project: %v", err)
		}
	}
	a.must(t, 0, "verify")
	a.must(t, 0, "release", "deploy", "--request-id", rid)
	for _, p := range []string{mine, target} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("after the release, %s: %v", p, err)
		}
	}
	b.must(t, 0, "verify")
}

// A holder cut off from the database (a partition: its packets vanish)
// stops its job before another host can take the lock over, which it then
// does with a higher fencing token; run exits 5; when the network comes
// back nothing is lost.
func TestPostgresHolderCutOffStopsBeforeAnotherHostTakesOver(t *testing.T) {
	t.Parallel()
	name := pgtest.CreateDatabase(t)
	proxy := pgtest.NewProxy(t, pgtest.TCPAddr(t))
	a := newPGHost(t, "cut-off", proxy.URL(name))
	direct := pgtest.Get(t).SocketURL(name)
	b := newPGHost(t, "survivor", direct)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	jobOut, died := filepath.Join(dir, "job"), filepath.Join(dir, "died")
	// The job notes the instant it is told to stop by creating a file: the
	// shell's own redirection, no process to start, so the instant is the
	// file's modification time (the clock the database reads too, on this
	// machine), and the file never exists without it.
	job := `trap ': > "$DIED"; exit 143' TERM
echo "$$ $LOCKLEDGER_FENCING_TOKEN" > "$OUT"
sleep 300 & wait`
	holder := a.command(ctx, "run", "deploy", "--ttl", "4s", "--", "sh", "-c", job)
	holder.Env = append(holder.Env, "OUT="+jobOut, "DIED="+died)
	var stderr bytes.Buffer
	holder.Stderr = &stderr
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	var child int
	var token int64
	for {
		b, _ := os.ReadFile(jobOut)
		if _, err := fmt.Sscan(string(b), &child, &token); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	proxy.Hang()
	exited := make(chan int, 1)
	go func() {
		holder.Wait()
		exited <- holder.ProcessState.ExitCode()
	}()
	// The survivor waits for the lock, and takes it over once the
	// database's clock says the cut-off holder's TTL has run out.
	r := b.must(t, 0, "acquire", "deploy", "--wait", "60s", "--force", "--json", "--pid", strconv.Itoa(os.Getpid()))
	var o struct {
		FencingToken int64 `json:"fencing_token"`
		Seq          int64 `json:"seq"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &o); err != nil || o.FencingToken <= token {
		t.Errorf("take-over: %v, token %d after the cut-off holder's %d", err, o.FencingToken, token)
	}
	var at string
	if err := pgtest.Open(t, direct).QueryRowContext(ctx, `SELECT at FROM events WHERE type = 'lock_stolen'`).Scan(&at); err != nil {
		t.Fatal(err)
	}
	stolen, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(died)
	if err != nil {
		t.Fatalf("the cut-off holder's job was not told to stop before the take-over: %v\n%s", err, stderr.String())
	}
	stopped := fi.ModTime()
	if !stopped.Before(stolen) {
		t.Errorf("the job was stopped at %s, after the take-over at %s", stopped, stolen)
	}
	select {
	case code := <-exited:
		if code != 5 {
			t.Errorf("the cut-off holder exited %d, want 5\n%s", code, stderr.String())
		}
	case <-ctx.Done():
		t.Fatalf("the cut-off holder did not exit\n%s", stderr.String())
	}
	if !gone(child) {
		t.Errorf("the cut-off holder's job (pid %d) outlived it", child)
	}
	proxy.Restore()
	b.must(t, 0, "verify")
	a.must(t, 0, "verify")
	if got := pgTypes(t, direct); got["lock_stolen"] != 1 || got["lock_acquired"] != 1 {
		t.Errorf("events: got %v, want the acquire and one take-over", got)
	}
	t.Logf("job stopped %s before the take-over", stolen.Sub(stopped))
}
