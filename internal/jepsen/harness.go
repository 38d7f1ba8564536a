package jepsen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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
	Hosts       int           // simulated hosts per trial; 0: 2 to 4, drawn per trial
	Parallel    int           // trials at once, each on its own lock and clients (default 1)
	TTL         time.Duration // the runs' --ttl, whole seconds (default 2s)
	Seed        uint64        //
	// ClientURL, when set, is the URL by which the runs (and the
	// harness's own CLI commands) reach the database named, through a
	// pooler such as PgBouncer; the harness's own connection, which
	// makes the databases and reads the fences, reaches it directly.
	ClientURL func(name string) string
	// Fence makes each job write through a fence at every line of its
	// record: a row in a table of the trial's database (PostgreSQL), a
	// line in a file (SQLite). A refusal is recorded in the ledger.
	Fence    bool
	Progress io.Writer // a line every few trials; nil: none
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
	// With Config.Fence: the writes the fence accepted and refused, the
	// accepted ones whose token was below one accepted before (check e),
	// and the refusals the jobs saw that the ledger has no
	// fence_rejected for (check f).
	Fenced            bool
	FencedAccepted    int
	FencedRejected    int
	StaleAccepted     int
	RejectionsMissing int
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
	r.FencedAccepted += o.FencedAccepted
	r.FencedRejected += o.FencedRejected
	r.StaleAccepted += o.StaleAccepted
	r.RejectionsMissing += o.RejectionsMissing
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

func newResult(st Store, f Fault, fenced bool) *Result {
	return &Result{Store: st, Fault: f, Fenced: fenced, LockVerdicts: map[porcupine.CheckResult]int{},
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
	return r.Overlaps > 0 || r.FencingViolations > 0 || r.Disagreements > 0 || r.StaleAccepted > 0 || r.RejectionsMissing > 0 ||
		r.Porcupine() != "ok" && r.NA == ""
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
	// clientURL is how the runs reach the worker's database (Config.ClientURL).
	clientURL string
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
	res := newResult(cfg.Store, cfg.Fault, cfg.Fence)
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
		u, err := url.Parse(h.cfg.DatabaseURL)
		if err != nil {
			return h, err
		}
		h.clientURL = h.cfg.DatabaseURL
		if cfg.ClientURL != nil {
			h.clientURL = cfg.ClientURL(strings.TrimPrefix(u.Path, "/"))
		}
		if h.pg, err = pgx.Connect(ctx, h.cfg.DatabaseURL); err != nil {
			return h, err
		}
	}
	if out, err := h.cli(ctx, 0, "init").CombinedOutput(); err != nil {
		return h, fmt.Errorf("init: %v: %s", err, out)
	}
	// After init: a database that holds other tables is no ledger's to create.
	if cfg.Fence && cfg.Store == Postgres {
		if err := installFence(ctx, h.pg); err != nil {
			return h, err
		}
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
		envRecord+"="+h.record(lock), envClient+"="+strconv.Itoa(client), envJobMS+"="+strconv.Itoa(jobMS),
		envRoot+"="+h.root(host))
	if h.cfg.Fence {
		kind := fenceFile
		if h.cfg.Store == Postgres {
			kind = fencePostgres
		}
		env = append(env, envFence+"="+kind, envBin+"="+h.cfg.Bin)
	}
	if h.cfg.Store == Postgres {
		env = append(env, "LOCKLEDGER_DATABASE_URL="+withApp(h.clientURL, appName(lock, client)))
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
