package jepsen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

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
	hosts := 2 + rng.IntN(3)
	if h.cfg.Hosts > 0 {
		hosts = h.cfg.Hosts
	}
	t := &trial{h: h, n: n, lock: lock, record: h.record(lock), rng: rng, hosts: hosts,
		live: map[string]*os.Process{}, current: map[int]string{}, victim: -1, gate: make(chan struct{}), aim: make(chan struct{})}
	if h.cfg.Fence && h.cfg.Store == Postgres {
		h.pgMu.Lock()
		err := createFenced(ctx, h.pg, lock)
		h.pgMu.Unlock()
		if err != nil {
			return nil, err
		}
	}
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
		if h.cfg.Fault.Forces() {
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
	StaleToken   int64     `json:"stale_token"` // fence_rejected
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
	res := newResult(t.h.cfg.Store, t.h.cfg.Fault, t.h.cfg.Fence)
	if err := t.poll(); err != nil {
		return nil, err
	}
	if t.h.cfg.Fence {
		awaitRecorders(t.lock) // check f reads what they record
	}
	evs, err := t.history(ctx)
	if err != nil {
		return nil, err
	}
	jobs := Jobs(t.seen, t.lock)
	var holdings []Holding
	ends := faultEnds
	var cur *Holding
	var rejections []Rejection
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
		case e.Type == "fence_rejected":
			rejections = append(rejections, Rejection{Request: e.RequestID, Token: e.StaleToken})
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
	if t.h.cfg.Fence {
		if err := t.checkFence(ctx, res, rejections); err != nil {
			return nil, err
		}
	}
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

// checkFence reads back the writes the fence accepted (check e) and
// matches the refusals the jobs saw with the ledger's (check f).
func (t *trial) checkFence(ctx context.Context, res *Result, rejections []Rejection) error {
	var writes []FencedWrite
	var err error
	if t.h.cfg.Store == Postgres {
		t.h.pgMu.Lock()
		writes, err = readFenced(ctx, t.h.pg, t.lock)
		t.h.pgMu.Unlock()
	} else {
		writes, err = readFencedFile(fencedFile(t.record))
	}
	if err != nil {
		return fmt.Errorf("reading the fenced writes: %w", err)
	}
	res.FencedAccepted = len(writes)
	res.StaleAccepted = StaleAccepted(writes)
	res.FencedRejected = Rejected(t.seen)
	res.RejectionsMissing = MissingRejections(t.seen, rejections)
	return nil
}
