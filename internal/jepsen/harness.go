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
	Parallel    int           // trials at once, each on its own lock and clients (default 1)
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
	// kill-acquire: where each trial's kill landed in its victim's run,
	// and the victim's first run's times (launch to its acquire event, and
	// to its job's start line) that aimed it.
	Acquire AcquireKills
}

// AcquireKills is where the kill-acquire class's kills landed: before the
// victim's acquire was recorded, after it was recorded but before its job
// started (the acquire itself, leaving a holding nobody runs), or after
// its job started.
type AcquireKills struct {
	BeforeCommit, Committed, AfterStart int
	ToAcquire, ToStart                  []time.Duration // per trial, measured on the victim's first run
	KillAt                              []time.Duration // per trial, the kill's delay after the victim's launch
}

// merge adds one trial's result to the class's.
func (r *Result) merge(o *Result) {
	r.Trials += o.Trials
	r.TakeOvers += o.TakeOvers
	r.Stuck += o.Stuck
	r.Jobs += o.Jobs
	r.Overlaps += o.Overlaps
	r.MaxOverlap = max(r.MaxOverlap, o.MaxOverlap)
	r.Loss = append(r.Loss, o.Loss...)
	r.FencingViolations += o.FencingViolations
	r.Disagreements += o.Disagreements
	for k, v := range o.LockVerdicts {
		r.LockVerdicts[k] += v
	}
	for k, v := range o.TokenVerdicts {
		r.TokenVerdicts[k] += v
	}
	for _, e := range o.Examples {
		if len(r.Examples) < 5 {
			r.Examples = append(r.Examples, e)
		}
	}
	a, b := &r.Acquire, o.Acquire
	a.BeforeCommit += b.BeforeCommit
	a.Committed += b.Committed
	a.AfterStart += b.AfterStart
	a.ToAcquire = append(a.ToAcquire, b.ToAcquire...)
	a.ToStart = append(a.ToStart, b.ToStart...)
	a.KillAt = append(a.KillAt, b.KillAt...)
}

func newResult(st Store, f Fault) *Result {
	return &Result{Store: st, Fault: f, LockVerdicts: map[porcupine.CheckResult]int{},
		TokenVerdicts: map[porcupine.CheckResult]int{}}
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

// harness is the state of one class's run, shared by its trials.
type harness struct {
	cfg     Config
	records string // a directory: each trial's outside record, named for its lock
	log     *os.File
	trust   string
	offset  int64 // wall ns - mono ns, to place the ledger's times on the record's clock
	pgMu    sync.Mutex
	pg      *pgx.Conn // one connection, so used by one trial at a time
}

// RunClass runs cfg's trials and checks them.
func RunClass(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Clients == 0 {
		cfg.Clients = 8
	}
	if cfg.TTL == 0 {
		cfg.TTL = 2 * time.Second
	}
	cfg.Parallel = max(cfg.Parallel, 1)
	res := newResult(cfg.Store, cfg.Fault)
	if cfg.Fault == FaultCutDB && cfg.Store != Postgres {
		res.NA = "no connection to cut on SQLite"
		return res, nil
	}
	began := time.Now()
	// Each worker has a ledger of its own (a root on SQLite, a database on
	// PostgreSQL): a run stopped inside an append holds the ledger's writer
	// lock, and on a shared ledger that fault would stall the other
	// trials' runs too.
	workers := make([]*harness, cfg.Parallel)
	for w := range workers {
		h, err := newHarness(ctx, cfg, w)
		if h != nil {
			defer h.close()
		}
		if err != nil {
			return nil, err
		}
		workers[w] = h
	}
	// Parallel workers take trial numbers one at a time. A pause class
	// counts the trials still running as take-overs to come, so that it
	// starts no more trials than its target could need.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		next     int
		running  int
		firstErr error
		wg       sync.WaitGroup
	)
	more := func() bool {
		done := cfg.Trials > 0 && next >= cfg.Trials || cfg.Trials == 0 && time.Since(began) >= cfg.Duration
		return !done || cfg.Fault.Pause() && res.TakeOvers+running < cfg.TakeOvers
	}
	for _, h := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if firstErr != nil || ctx.Err() != nil || !more() {
					mu.Unlock()
					return
				}
				n := next
				next++
				running++
				mu.Unlock()
				tr, err := h.trial(ctx, n)
				mu.Lock()
				running--
				if err != nil {
					if firstErr == nil {
						firstErr = fmt.Errorf("%s %s trial %d: %w", cfg.Store, cfg.Fault, n, err)
					}
					cancel()
					mu.Unlock()
					return
				}
				res.merge(tr)
				if cfg.Progress != nil && res.Trials%25 == 0 {
					fmt.Fprintf(cfg.Progress, "jepsen: %s %s: %d trials, %d take-overs, %d overlaps (%s)\n",
						cfg.Store, cfg.Fault, res.Trials, res.TakeOvers, res.Overlaps, time.Since(began).Round(time.Second))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res.Elapsed = time.Since(began)
	return res, nil
}

// newHarness makes worker w's ledger: its directory (Dir/w<w>), and on
// PostgreSQL its database (worker 0 the one given, the others created
// beside it).
func newHarness(ctx context.Context, cfg Config, w int) (*harness, error) {
	cfg.Dir = filepath.Join(cfg.Dir, "w"+strconv.Itoa(w))
	h := &harness{cfg: cfg, records: filepath.Join(cfg.Dir, "records"), trust: filepath.Join(cfg.Dir, "trust")}
	h.offset = time.Now().UnixNano() - Mono()
	if err := os.MkdirAll(h.records, 0o700); err != nil {
		return nil, err
	}
	var err error
	if h.log, err = os.Create(filepath.Join(cfg.Dir, "runs.log")); err != nil {
		return nil, err
	}
	if cfg.Store == Postgres {
		if w > 0 {
			u, err := url.Parse(cfg.DatabaseURL)
			if err != nil {
				return h, err
			}
			name := strings.TrimPrefix(u.Path, "/") + "_w" + strconv.Itoa(w)
			admin, err := pgx.Connect(ctx, cfg.DatabaseURL)
			if err != nil {
				return h, err
			}
			_, err = admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
			admin.Close(context.Background())
			if err != nil {
				return h, err
			}
			u.Path = "/" + name
			h.cfg.DatabaseURL = u.String()
		}
		if h.pg, err = pgx.Connect(ctx, h.cfg.DatabaseURL); err != nil {
			return h, err
		}
	}
	if out, err := h.cli(ctx, 0, "init").CombinedOutput(); err != nil {
		return h, fmt.Errorf("init: %v: %s", err, out)
	}
	return h, nil
}

func (h *harness) close() {
	if h.pg != nil {
		h.pg.Close(context.Background())
	}
	h.log.Close()
}

// root is host's root: on SQLite the one root every host shares, on
// PostgreSQL each host's own (its lock files).
func (h *harness) root(host int) string {
	if h.cfg.Store == SQLite {
		return filepath.Join(h.cfg.Dir, "root")
	}
	return filepath.Join(h.cfg.Dir, "host-"+strconv.Itoa(host))
}

// env is what makes a process client c of the trial on lock on host: the
// host id, the store (a connection named for the trial's client, so that
// cut-db finds its backends and no other trial's), the trust store and the
// JOB's settings (the trial's own record).
func (h *harness) env(lock string, host, client int, jobMS int) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LOCKLEDGER_") && !strings.HasPrefix(kv, "JEPSEN_") {
			env = append(env, kv)
		}
	}
	env = append(env, "LOCKLEDGER_HOST_ID=host-"+strconv.Itoa(host), "LOCKLEDGER_TRUST_DIR="+h.trust,
		envRecord+"="+h.record(lock), envClient+"="+strconv.Itoa(client), envJobMS+"="+strconv.Itoa(jobMS))
	if h.cfg.Store == Postgres {
		env = append(env, "LOCKLEDGER_DATABASE_URL="+withApp(h.cfg.DatabaseURL, appName(lock, client)))
	}
	return env
}

func appName(lock string, client int) string { return "jepsen-" + lock + "-c" + strconv.Itoa(client) }

// record is the outside record of the trial on lock: one file per trial,
// so that a trial reads only its own jobs' lines.
func (h *harness) record(lock string) string { return filepath.Join(h.records, lock) }

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
	c.Env = h.env("harness", host, 99, 0)
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

// trial is one episode on a lock of its own, with clients, processes and
// an outside record of its own: trials running at once share only the
// store and the harness's log.
type trial struct {
	h       *harness
	n       int
	lock    string
	record  string
	rng     *rand.Rand
	hosts   int
	mu      sync.Mutex
	stopped bool
	live    map[string]*os.Process // request id -> its run, while it runs
	current map[int]string         // client -> request id of its run
	runs    []Run
	seen    []Line // the record's lines so far
	off     int64  // how far the record has been read

	// kill-acquire: the victim client's runs are announced on launched,
	// its second starts once aim is closed (the nemesis has measured the
	// first), and the other clients once gate is closed (after the kill).
	victim   int
	launched chan Run
	aim      chan struct{}
	gate     chan struct{}
	opened   sync.Once
	aimed    sync.Once
}

func (h *harness) trial(ctx context.Context, n int) (*Result, error) {
	// Each trial draws from its own generator, so that its choices do not
	// depend on how the trials running at once interleave.
	rng := rand.New(rand.NewPCG(h.cfg.Seed, uint64(n)<<8|uint64(slices.Index(AllFaults, h.cfg.Fault))))
	lock := fmt.Sprintf("t%05d", n)
	t := &trial{h: h, n: n, lock: lock, record: h.record(lock), rng: rng, hosts: 2 + rng.IntN(3),
		live: map[string]*os.Process{}, current: map[int]string{}, victim: -1, gate: make(chan struct{}), aim: make(chan struct{})}
	if h.cfg.Fault == FaultKillAcquire {
		t.victim = rng.IntN(h.cfg.Clients)
		t.launched = make(chan Run, 2)
	} else {
		t.open()
	}
	var wg sync.WaitGroup
	for c := range h.cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.client(ctx, c)
		}()
	}
	faultEnds, stuck, kill := t.nemesis(ctx)
	// A TERM that reaches a run just as its wait ends may be spent on the
	// wait, and its job run on: say it again until every run is gone.
	for t.stop(); !t.await(ctx, time.Now().Add(time.Second), t.idle); t.stop() {
	}
	wg.Wait()
	return t.check(ctx, faultEnds, stuck, kill)
}

// open lets every client start.
func (t *trial) open() { t.opened.Do(func() { close(t.gate) }) }

// fire lets the kill-acquire victim start its second run.
func (t *trial) fire() { t.aimed.Do(func() { close(t.aim) }) }

// client loops `lockledger run` on the trial's lock until the trial stops.
func (t *trial) client(ctx context.Context, c int) {
	h := t.h
	host := c % t.hosts
	if c != t.victim {
		select {
		case <-t.gate:
		case <-ctx.Done():
			return
		}
	}
	for k := 0; ; k++ {
		if c == t.victim && k == 1 {
			select {
			case <-t.aim:
			case <-ctx.Done():
				return
			}
		}
		rid := fmt.Sprintf("%s-c%d-k%d", t.lock, c, k)
		args := []string{"--root", h.root(host), "run", t.lock, "--wait", "30s", "--ttl", strconv.Itoa(int(h.cfg.TTL / time.Second)),
			"--kill-grace", "1s", "--request-id", rid, "--actor", "client-" + strconv.Itoa(c)}
		if h.cfg.Fault.Pause() {
			args = append(args, "--force")
		}
		cmd := exec.Command(h.cfg.Bin, append(args, "--", h.cfg.Self)...)
		cmd.Env = h.env(t.lock, host, c, h.jobMS())
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
		if c == t.victim && k < 2 {
			t.launched <- Run{Client: c, Request: rid, Launch: launch}
		}
		_ = cmd.Wait()
		exit := Mono()
		r := Run{Client: c, Request: rid, Launch: launch, Exit: exit, Code: cmd.ProcessState.ExitCode()}
		t.mu.Lock()
		delete(t.live, rid)
		t.runs = append(t.runs, r)
		t.mu.Unlock()
		// A run refused at once (a stale lock it may not take over) is
		// retried after a pause, as a client would: trials running at once
		// must not turn such refusals into a storm of processes.
		if r.Code > 0 && time.Duration(exit-launch) < time.Second {
			select {
			case <-time.After(100*time.Millisecond + time.Duration(t.randN(200))*time.Millisecond):
			case <-ctx.Done():
				return
			}
		}
	}
}

// randN is the trial's generator, for the clients' goroutines.
func (t *trial) randN(n int) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rng.IntN(n)
}

// stop ends the trial: no new runs; those running are resumed and told to
// stop (TERM, which run forwards to its job).
func (t *trial) stop() {
	t.open()
	t.fire()
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

// poll reads the record's new lines.
func (t *trial) poll() error {
	f, err := os.Open(t.record)
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

// startOf is the start line of rid's job, if the record has one yet.
func (t *trial) startOf(rid string) (Line, bool) {
	for _, l := range t.seen {
		if l.Kind == "start" && l.Request == rid {
			return l, true
		}
	}
	return Line{}, false
}

// acquireKill is what the kill-acquire nemesis did: its victim client's
// first run (the probe, alone on the free lock, which it measured), and
// the second (the victim), launched once the probe had released the lock
// and killed Delay after its launch.
type acquireKill struct {
	Probe, Victim Run
	ToAcquire     time.Duration // the probe's launch to its acquire event's time (0: not found)
	ToStart       time.Duration // the probe's launch to its job's start line
	Delay         time.Duration
}

// killAcquire aims a SIGKILL at an acquire. The victim client runs alone
// on the free lock once, the probe: its launch to its acquire event (A)
// and to its job's start line (S) measure, under the machine's load of the
// moment, when a run records its acquire. Then the victim client runs
// again, on the lock the probe released, and the nemesis kills that run
// at a random moment of [A - (S-A)/2, S]: mostly while it records its
// acquire or between that and its job's start, sometimes just before.
// The other clients start after the kill. It returns the kill's time and
// the victim's line (the kill), or ok false when the victim never got there.
func (t *trial) killAcquire(ctx context.Context, deadline time.Time, ends map[string]int64) (k *acquireKill, faultAt int64, victim Line, ok bool) {
	recv := func() (Run, bool) {
		select {
		case r := <-t.launched:
			return r, true
		case <-ctx.Done():
		case <-time.After(time.Until(deadline)):
		}
		return Run{}, false
	}
	k = &acquireKill{}
	if k.Probe, ok = recv(); !ok {
		return nil, 0, Line{}, false
	}
	var start Line
	if !t.await(ctx, deadline, func() bool { var s bool; start, s = t.startOf(k.Probe.Request); return s }) {
		return nil, 0, Line{}, false
	}
	k.ToStart = time.Duration(start.Mono - k.Probe.Launch)
	if !t.await(ctx, deadline, func() bool { return t.exited(k.Probe.Request) }) {
		return nil, 0, Line{}, false
	}
	evs, err := t.history(ctx)
	if err != nil {
		fmt.Fprintln(t.h.log, "jepsen: kill-acquire:", err)
	}
	for _, e := range evs {
		if e.RequestID == k.Probe.Request && (e.Type == "lock_acquired" || e.Type == "lock_stolen") {
			k.ToAcquire = time.Duration(e.At.UnixNano() - t.h.offset - k.Probe.Launch)
		}
	}
	lo := time.Duration(0)
	if k.ToAcquire > 0 && k.ToAcquire < k.ToStart {
		lo = max(0, k.ToAcquire-(k.ToStart-k.ToAcquire)/2)
	}
	t.fire()
	if k.Victim, ok = recv(); !ok {
		return nil, 0, Line{}, false
	}
	t.mu.Lock()
	k.Delay = lo + time.Duration(t.rng.Int64N(int64(k.ToStart-lo)+1))
	t.mu.Unlock()
	if d := time.Duration(k.Victim.Launch + int64(k.Delay) - Mono()); d > 0 {
		time.Sleep(d)
	}
	faultAt = Mono()
	k.Delay = time.Duration(faultAt - k.Victim.Launch)
	if p := t.process(k.Victim.Request); p != nil {
		_ = p.Kill()
		ends[k.Victim.Request] = Mono()
	}
	t.open()
	return k, faultAt, Line{Request: k.Victim.Request, Mono: Mono()}, true
}

// nemesis injects the trial's fault and waits for the trial's end: another
// job running after the fault, and the victim's run gone. It returns the
// times at which a fault ended a holding (by request id).
func (t *trial) nemesis(ctx context.Context) (ends map[string]int64, stuck bool, kill *acquireKill) {
	h := t.h
	ends = map[string]int64{}
	deadline := time.Now().Add(30*time.Second + 4*h.cfg.TTL)
	var victim Line
	var faultAt int64 // when the fault began
	if h.cfg.Fault == FaultKillAcquire {
		var ok bool
		if kill, faultAt, victim, ok = t.killAcquire(ctx, deadline, ends); !ok {
			return ends, true, nil
		}
	} else {
		if !t.await(ctx, deadline, func() bool { var ok bool; victim, ok = t.firstStart(0, ""); return ok }) {
			return ends, true, nil
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
				h.pgMu.Lock()
				_, err := h.pg.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()`,
					appName(t.lock, victim.Client))
				h.pgMu.Unlock()
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
	return ends, !ok, kill
}

func (t *trial) hasLaterLine(start Line) bool {
	for _, l := range t.seen {
		if l.Request == start.Request && l.Kind != "start" {
			return true
		}
	}
	return false
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

// check runs every check on the trial and returns what they found, a
// result of one trial.
func (t *trial) check(ctx context.Context, faultEnds map[string]int64, stuck bool, kill *acquireKill) (*Result, error) {
	res := newResult(t.h.cfg.Store, t.h.cfg.Fault)
	if err := t.poll(); err != nil {
		return nil, err
	}
	evs, err := t.history(ctx)
	if err != nil {
		return nil, err
	}
	jobs := Jobs(t.seen, t.lock)
	var holdings []Holding
	ends := faultEnds
	var cur *Holding
	for _, e := range evs {
		at := e.At.UnixNano() - t.h.offset
		switch {
		case e.Type == "lock_acquired" || e.Type == "lock_stolen":
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
	held := map[string]Holding{}
	for _, hd := range holdings {
		if hd.Type == "lock_stolen" {
			res.TakeOvers = 1
		}
		held[hd.Request] = hd
	}
	res.Trials = 1
	res.Jobs = len(jobs)
	if stuck {
		res.Stuck = 1
	}
	for _, o := range Exclusion(jobs) {
		res.Overlaps++
		res.MaxOverlap = max(res.MaxOverlap, o.By)
		if len(res.Examples) < 5 {
			res.Examples = append(res.Examples, fmt.Sprintf("%s %s: %s and %s overlap by %v", res.Store, res.Fault, o.First, o.Second, o.By.Round(time.Millisecond)))
		}
	}
	res.FencingViolations = FencingViolations(jobs)
	res.Disagreements = Disagreements(jobs, holdings)
	res.Loss = LossToStop(jobs, ends)
	t.mu.Lock()
	runs := slices.Clone(t.runs)
	t.mu.Unlock()
	lv, tv := Linearizable(jobs, runs, 10*time.Second)
	res.LockVerdicts[lv]++
	res.TokenVerdicts[tv]++
	if kill != nil {
		a := &res.Acquire
		a.ToStart = []time.Duration{kill.ToStart}
		a.KillAt = []time.Duration{kill.Delay}
		if kill.ToAcquire > 0 {
			a.ToAcquire = []time.Duration{kill.ToAcquire}
		}
		_, started := t.startOf(kill.Victim.Request)
		_, committed := held[kill.Victim.Request]
		switch {
		case started:
			a.AfterStart++
		case committed:
			a.Committed++
		default:
			a.BeforeCommit++
		}
	}
	return res, nil
}

// setEnd keeps the earliest event that ended a holding.
func setEnd(ends map[string]int64, rid string, at int64) {
	if e, ok := ends[rid]; !ok || at < e {
		ends[rid] = at
	}
}
