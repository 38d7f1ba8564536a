package jepsen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/jackc/pgx/v5"
)

// Config is one fault class's run on one store.
type Config struct {
	Bin         string        // the lockledger CLI
	Self        string        // the JOB: an executable that calls JobMain first
	Store       Store         // sqlite or postgres
	DatabaseURL string        // postgres: an empty database, reached as a superuser
	Dir         string        // a directory of its own for the roots, the record and the logs
	Fault       Fault         //
	Trials      int           // trials to run; 0: until Duration has passed
	Duration    time.Duration // with Trials 0
	TakeOvers   int           // pause classes: also go on until this many trials took the lock over
	Clients     int           // default 8
	TTL         time.Duration // the runs' --ttl, whole seconds (default 2s)
	Seed        uint64        //
	Progress    io.Writer     // a line every few trials; nil: none
}

// Result is what the checks found in one class's trials.
type Result struct {
	Store             Store
	Fault             Fault
	NA                string // why the class does not apply to the store ("": it ran)
	Trials            int
	TakeOvers         int // trials whose history has a lock_stolen
	Stuck             int // trials that did not reach their end within the deadline
	Jobs              int
	Overlaps          int
	MaxOverlap        time.Duration
	Loss              []time.Duration // loss-to-stop of each holding not ended by its own release
	FencingViolations int
	Disagreements     int
	LockVerdicts      map[porcupine.CheckResult]int // per trial
	TokenVerdicts     map[porcupine.CheckResult]int
	Examples          []string // the first few overlaps, for the log
	Elapsed           time.Duration
}

// Porcupine is the verdict of both models over every trial: Ok, or how
// many trials were Illegal (and Unknown, timed out).
func (r *Result) Porcupine() string {
	if r.NA != "" {
		return "-"
	}
	bad := func(m map[porcupine.CheckResult]int) string {
		var s []string
		if n := m[porcupine.Illegal]; n > 0 {
			s = append(s, fmt.Sprintf("%d illegal", n))
		}
		if n := m[porcupine.Unknown]; n > 0 {
			s = append(s, fmt.Sprintf("%d unknown", n))
		}
		return strings.Join(s, ", ")
	}
	l, t := bad(r.LockVerdicts), bad(r.TokenVerdicts)
	switch {
	case l == "" && t == "":
		return "ok"
	case t == "":
		return "lock: " + l
	case l == "":
		return "token: " + t
	}
	return "lock: " + l + "; token: " + t
}

// Failed reports any check that failed.
func (r *Result) Failed() bool {
	return r.Overlaps > 0 || r.FencingViolations > 0 || r.Disagreements > 0 || r.Porcupine() != "ok" && r.NA == ""
}

// ErrNotApplicable: the fault class has no meaning on the store.
var ErrNotApplicable = errors.New("not applicable")

// harness is the state of one class's run.
type harness struct {
	cfg    Config
	rng    *rand.Rand
	record string
	log    *os.File
	trust  string
	offset int64 // wall ns - mono ns, to place the ledger's times on the record's clock
	pg     *pgx.Conn
}

// RunClass runs cfg's trials and checks them.
func RunClass(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Clients == 0 {
		cfg.Clients = 8
	}
	if cfg.TTL == 0 {
		cfg.TTL = 2 * time.Second
	}
	res := &Result{Store: cfg.Store, Fault: cfg.Fault, LockVerdicts: map[porcupine.CheckResult]int{},
		TokenVerdicts: map[porcupine.CheckResult]int{}}
	if cfg.Fault == FaultCutDB && cfg.Store != Postgres {
		res.NA = "no connection to cut on SQLite"
		return res, nil
	}
	began := time.Now()
	h := &harness{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, uint64(len(cfg.Fault)))),
		record: filepath.Join(cfg.Dir, "record"), trust: filepath.Join(cfg.Dir, "trust")}
	h.offset = time.Now().UnixNano() - Mono()
	var err error
	if h.log, err = os.Create(filepath.Join(cfg.Dir, "runs.log")); err != nil {
		return nil, err
	}
	defer h.log.Close()
	if cfg.Store == Postgres {
		if h.pg, err = pgx.Connect(ctx, cfg.DatabaseURL); err != nil {
			return nil, err
		}
		defer h.pg.Close(context.Background())
	}
	if out, err := h.cli(ctx, 0, "init").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("init: %v: %s", err, out)
	}
	for n := 0; ; n++ {
		done := cfg.Trials > 0 && n >= cfg.Trials || cfg.Trials == 0 && time.Since(began) >= cfg.Duration
		if done && (!cfg.Fault.Pause() || res.TakeOvers >= cfg.TakeOvers) {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := h.trial(ctx, n, res); err != nil {
			return nil, fmt.Errorf("%s %s trial %d: %w", cfg.Store, cfg.Fault, n, err)
		}
		if cfg.Progress != nil && (n+1)%25 == 0 {
			fmt.Fprintf(cfg.Progress, "jepsen: %s %s: %d trials, %d take-overs, %d overlaps (%s)\n",
				cfg.Store, cfg.Fault, res.Trials, res.TakeOvers, res.Overlaps, time.Since(began).Round(time.Second))
		}
	}
	res.Elapsed = time.Since(began)
	return res, nil
}

// root is host's root: on SQLite the one root every host shares, on
// PostgreSQL each host's own (its lock files).
func (h *harness) root(host int) string {
	if h.cfg.Store == SQLite {
		return filepath.Join(h.cfg.Dir, "root")
	}
	return filepath.Join(h.cfg.Dir, "host-"+strconv.Itoa(host))
}

// env is what makes a process client c on host: the host id, the store
// (a connection named for the client, so that cut-db finds its backends),
// the trust store and the JOB's settings.
func (h *harness) env(host, client int, jobMS int) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LOCKLEDGER_") && !strings.HasPrefix(kv, "JEPSEN_") {
			env = append(env, kv)
		}
	}
	env = append(env, "LOCKLEDGER_HOST_ID=host-"+strconv.Itoa(host), "LOCKLEDGER_TRUST_DIR="+h.trust,
		envRecord+"="+h.record, envClient+"="+strconv.Itoa(client), envJobMS+"="+strconv.Itoa(jobMS))
	if h.cfg.Store == Postgres {
		env = append(env, "LOCKLEDGER_DATABASE_URL="+withApp(h.cfg.DatabaseURL, appName(client)))
	}
	return env
}

func appName(client int) string { return "jepsen-c" + strconv.Itoa(client) }

func withApp(u, app string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	q := p.Query()
	q.Set("application_name", app)
	p.RawQuery = q.Encode()
	return p.String()
}

// cli is a command of the harness itself (init, history), as host 0.
func (h *harness) cli(ctx context.Context, host int, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, h.cfg.Bin, append([]string{"--root", h.root(host)}, args...)...)
	c.Env = h.env(host, 99, 0)
	return c
}

// jobMS is how long each job runs: past the pause or the cut, in the
// classes that stop or cut off a holder, so that the fault lands while
// its job runs; briefly otherwise.
func (h *harness) jobMS() int {
	switch h.cfg.Fault {
	case FaultPauseRun, FaultPauseGroup, FaultCutDB:
		return int((2*h.cfg.TTL + time.Second) / time.Millisecond)
	}
	return 300
}

// trial is one episode on a lock of its own.
type trial struct {
	h       *harness
	lock    string
	hosts   int
	mu      sync.Mutex
	stopped bool
	live    map[string]*os.Process // request id -> its run, while it runs
	current map[int]string         // client -> request id of its run
	runs    []Run
	seen    []Line // the record's lines of this trial so far
	off     int64  // how far the record has been read
}

func (h *harness) trial(ctx context.Context, n int, res *Result) error {
	t := &trial{h: h, lock: fmt.Sprintf("t%05d", n), hosts: 2 + h.rng.IntN(3),
		live: map[string]*os.Process{}, current: map[int]string{}}
	if st, err := os.Stat(h.record); err == nil {
		t.off = st.Size()
	}
	var wg sync.WaitGroup
	for c := range h.cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.client(ctx, c)
		}()
	}
	faultEnds, stuck := t.nemesis(ctx)
	// A TERM that reaches a run just as its wait ends may be spent on the
	// wait, and its job run on: say it again until every run is gone.
	for t.stop(); !t.await(ctx, time.Now().Add(time.Second), t.idle); t.stop() {
	}
	wg.Wait()
	return t.check(ctx, res, faultEnds, stuck)
}

// client loops `lockledger run` on the trial's lock until the trial stops.
func (t *trial) client(ctx context.Context, c int) {
	h := t.h
	host := c % t.hosts
	for k := 0; ; k++ {
		rid := fmt.Sprintf("%s-c%d-k%d", t.lock, c, k)
		args := []string{"--root", h.root(host), "run", t.lock, "--wait", "30s", "--ttl", strconv.Itoa(int(h.cfg.TTL / time.Second)),
			"--kill-grace", "1s", "--request-id", rid, "--actor", "client-" + strconv.Itoa(c)}
		if h.cfg.Fault.Pause() {
			args = append(args, "--force")
		}
		cmd := exec.Command(h.cfg.Bin, append(args, "--", h.cfg.Self)...)
		cmd.Env = h.env(host, c, h.jobMS())
		cmd.Stdout, cmd.Stderr = h.log, h.log
		// A group of its own, so that the harness's terminal signals reach
		// only the harness, and the nemesis's only the run it aims at.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		t.mu.Lock()
		if t.stopped || ctx.Err() != nil {
			t.mu.Unlock()
			return
		}
		launch := Mono()
		if err := cmd.Start(); err != nil {
			t.mu.Unlock()
			fmt.Fprintln(h.log, "jepsen: start:", err)
			return
		}
		t.live[rid], t.current[c] = cmd.Process, rid
		t.mu.Unlock()
		_ = cmd.Wait()
		exit := Mono()
		t.mu.Lock()
		delete(t.live, rid)
		t.runs = append(t.runs, Run{Client: c, Request: rid, Launch: launch, Exit: exit, Code: cmd.ProcessState.ExitCode()})
		t.mu.Unlock()
	}
}

// stop ends the trial: no new runs; those running are resumed and told to
// stop (TERM, which run forwards to its job).
func (t *trial) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	for _, p := range t.live {
		_ = p.Signal(syscall.SIGCONT)
		_ = p.Signal(syscall.SIGTERM)
	}
}

func (t *trial) idle() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.live) == 0
}

func (t *trial) process(rid string) *os.Process {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.live[rid]
}

func (t *trial) exited(rid string) bool { return t.process(rid) == nil }

// poll reads the record's new lines of this trial.
func (t *trial) poll() error {
	f, err := os.Open(t.h.record)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	defer f.Close()
	b, err := io.ReadAll(io.NewSectionReader(f, t.off, 1<<40))
	if err != nil {
		return err
	}
	if i := strings.LastIndexByte(string(b), '\n'); i >= 0 {
		b = b[:i+1]
	} else {
		return nil
	}
	t.off += int64(len(b))
	lines, err := ReadRecord(strings.NewReader(string(b)))
	if err != nil {
		return err
	}
	for _, l := range lines {
		if l.Lock == t.lock {
			t.seen = append(t.seen, l)
		}
	}
	return nil
}

// await polls the record (and cond) until cond holds, or deadline.
func (t *trial) await(ctx context.Context, deadline time.Time, cond func() bool) bool {
	for {
		if err := t.poll(); err != nil {
			fmt.Fprintln(t.h.log, "jepsen:", err)
		}
		if cond() {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// firstStart is the first start line after mono time after whose request
// is not skip, if the record has one yet.
func (t *trial) firstStart(after int64, skip string) (Line, bool) {
	for _, l := range t.seen {
		if l.Kind == "start" && l.Mono > after && l.Request != skip {
			return l, true
		}
	}
	return Line{}, false
}

// nemesis injects the trial's fault and waits for the trial's end: another
// job running after the fault, and the victim's run gone. It returns the
// times at which a fault ended a holding (by request id).
func (t *trial) nemesis(ctx context.Context) (ends map[string]int64, stuck bool) {
	h := t.h
	ends = map[string]int64{}
	deadline := time.Now().Add(30*time.Second + 4*h.cfg.TTL)
	var victim Line
	var faultAt int64 // when the fault began
	if h.cfg.Fault == FaultKillAcquire {
		// A client's run, killed soon after it starts: in its open, its
		// acquire, its wait, or just after it took the lock.
		c := h.rng.IntN(h.cfg.Clients)
		var rid string
		if !t.await(ctx, deadline, func() bool { rid = t.currentOf(c); return rid != "" }) {
			return ends, true
		}
		time.Sleep(time.Duration(h.rng.IntN(60)) * time.Millisecond)
		faultAt = Mono()
		if p := t.process(rid); p != nil {
			_ = p.Kill()
			ends[rid] = Mono()
		}
		victim = Line{Request: rid, Mono: Mono()}
	} else {
		if !t.await(ctx, deadline, func() bool { var ok bool; victim, ok = t.firstStart(0, ""); return ok }) {
			return ends, true
		}
		p := t.process(victim.Request)
		faultAt = Mono()
		switch h.cfg.Fault {
		case FaultKillRun:
			if p != nil {
				_ = p.Kill()
				ends[victim.Request] = Mono()
			}
		case FaultKillJob:
			if syscall.Kill(victim.PID, syscall.SIGKILL) == nil {
				ends[victim.Request] = Mono()
			}
		case FaultPauseRun, FaultPauseGroup:
			if p != nil {
				_ = p.Signal(syscall.SIGSTOP)
				if h.cfg.Fault == FaultPauseGroup {
					_ = syscall.Kill(-victim.PID, syscall.SIGSTOP) // run made the job its group's leader
				}
				time.Sleep(h.cfg.TTL * 3 / 2)
				_ = p.Signal(syscall.SIGCONT)
				if h.cfg.Fault == FaultPauseGroup {
					_ = syscall.Kill(-victim.PID, syscall.SIGCONT)
				}
			}
		case FaultCutDB:
			until := time.Now().Add(h.cfg.TTL * 3 / 2)
			for time.Now().Before(until) && !t.exited(victim.Request) {
				_, err := h.pg.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()`,
					appName(victim.Client))
				if err != nil {
					fmt.Fprintln(h.log, "jepsen: cut-db:", err)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	// The trial ends once another job has run since the fault began (and
	// written a second line) and the victim's run is gone.
	var next Line
	ok := t.await(ctx, deadline, func() bool {
		var started bool
		if next, started = t.firstStart(min(faultAt, victim.Mono), victim.Request); !started {
			return false
		}
		return t.hasLaterLine(next) && t.exited(victim.Request)
	})
	return ends, !ok
}

func (t *trial) hasLaterLine(start Line) bool {
	for _, l := range t.seen {
		if l.Request == start.Request && l.Kind != "start" {
			return true
		}
	}
	return false
}

func (t *trial) currentOf(c int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.current[c]
}

// historyEvent is what the checks read of `lockledger history --json`.
type historyEvent struct {
	Seq          int64     `json:"seq"`
	Type         string    `json:"type"`
	RequestID    string    `json:"request_id"`
	FencingToken int64     `json:"fencing_token"`
	At           time.Time `json:"at"`
	LockLost     bool      `json:"lock_lost"`
}

func (t *trial) history(ctx context.Context) ([]historyEvent, error) {
	c := t.h.cli(ctx, 0, "history", t.lock, "--json")
	var stderr strings.Builder
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		return nil, fmt.Errorf("history: %v: %s", err, stderr.String())
	}
	var evs []historyEvent
	if err := json.Unmarshal(out, &evs); err != nil {
		return nil, fmt.Errorf("history --json: %w", err)
	}
	slices.SortFunc(evs, func(a, b historyEvent) int { return cmp64(a.Seq, b.Seq) })
	return evs, nil
}

// check runs every check on the trial and adds it to res.
func (t *trial) check(ctx context.Context, res *Result, faultEnds map[string]int64, stuck bool) error {
	if err := t.poll(); err != nil {
		return err
	}
	evs, err := t.history(ctx)
	if err != nil {
		return err
	}
	jobs := Jobs(t.seen, t.lock)
	var holdings []Holding
	ends := faultEnds
	var cur *Holding
	for _, e := range evs {
		at := e.At.UnixNano() - t.h.offset
		switch {
		case e.Type == "lock_acquired" || e.Type == "lock_stolen":
			if e.Type == "lock_stolen" {
				res.TakeOvers++ // counted once per trial below
			}
			if cur != nil {
				setEnd(ends, cur.Request, at)
			}
			holdings = append(holdings, Holding{Seq: e.Seq, Type: e.Type, Request: e.RequestID, Token: e.FencingToken, At: at})
			cur = &holdings[len(holdings)-1]
		case e.Type == "heartbeat_failed" && e.LockLost && cur != nil && e.RequestID == cur.Request:
			setEnd(ends, cur.Request, at)
			cur = nil
		case e.Type == "lock_released" && cur != nil && e.RequestID == cur.Request:
			cur = nil
		}
	}
	stolen := 0
	for _, hd := range holdings {
		if hd.Type == "lock_stolen" {
			stolen++
		}
	}
	res.TakeOvers -= stolen
	if stolen > 0 {
		res.TakeOvers++
	}
	res.Trials++
	res.Jobs += len(jobs)
	if stuck {
		res.Stuck++
	}
	for _, o := range Exclusion(jobs) {
		res.Overlaps++
		res.MaxOverlap = max(res.MaxOverlap, o.By)
		if len(res.Examples) < 5 {
			res.Examples = append(res.Examples, fmt.Sprintf("%s %s: %s and %s overlap by %v", res.Store, res.Fault, o.First, o.Second, o.By.Round(time.Millisecond)))
		}
	}
	res.FencingViolations += FencingViolations(jobs)
	res.Disagreements += Disagreements(jobs, holdings)
	res.Loss = append(res.Loss, LossToStop(jobs, ends)...)
	t.mu.Lock()
	runs := slices.Clone(t.runs)
	t.mu.Unlock()
	lv, tv := Linearizable(jobs, runs, 10*time.Second)
	res.LockVerdicts[lv]++
	res.TokenVerdicts[tv]++
	return nil
}

// setEnd keeps the earliest event that ended a holding.
func setEnd(ends map[string]int64, rid string, at int64) {
	if e, ok := ends[rid]; !ok || at < e {
		ends[rid] = at
	}
}
