// Command jepsen runs the fault harness of internal/jepsen against the
// lockledger CLI built from this module (make jepsen): clients on simulated
// hosts loop `lockledger run` on one lock per trial while a nemesis kills,
// pauses or cuts off the holder, and prints a table of what the checks found.
// It exits 1 when any check failed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/lockledger/lockledger/internal/jepsen"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/internal/proc"
)

func main() {
	jepsen.JobMain()
	os.Exit(run(os.Args[1:]))
}

// run is the harness: it returns its exit code, so that every deferred
// stop (the clusters, the processes of its build left behind, the work
// directory) has run by the time the process exits, on every path.
func run(args []string) int {
	flags := flag.NewFlagSet("jepsen", flag.ContinueOnError)
	store := flags.String("store", "both", "sqlite, postgres or both")
	trials := flags.Int("trials", 0, "trials per fault class and store (0: run each class for -duration)")
	duration := flags.Duration("duration", time.Minute, "time per fault class and store, when -trials is 0")
	takeovers := flags.Int("takeovers", 0, "in the pause classes, also go on until this many trials took the lock over")
	faults := flags.String("faults", "all", "comma-separated fault classes: "+fmt.Sprint(jepsen.AllFaults)+", or all")
	seed := flags.Uint64("seed", uint64(time.Now().UnixNano()), "seed of the nemesis's choices")
	ttl := flags.Duration("ttl", 0, "the runs' --ttl (whole seconds); pauses last 1.5 x ttl (default: 2s on sqlite, 4s on postgres)")
	clients := flags.Int("clients", 8, "clients per trial, on -hosts simulated hosts")
	hosts := flags.Int("hosts", 0, "simulated hosts per trial (1: every client on one host, where a take-over stops the old job; 0: 2 to 4, drawn per trial)")
	parallel := flags.Int("parallel", 4, "trials at once per fault class, each on its own lock with its own clients and record; each worker on a ledger of its own")
	keep := flags.Bool("keep", false, "keep the work directory (record, roots, the runs' logs)")
	bounced := flags.Bool("bouncer", false, "postgres: the runs reach the database through PgBouncer in transaction mode (internal/pgtest's), as a fleet behind a pooler does")
	var fenced fenceFlag
	flags.Var(&fenced, "fence", "jobs write through a fence at each line (PostgreSQL: a table fenced by the lockledger_fence trigger; SQLite: fence.WriteFile) and record each refusal in the ledger (default: on for postgres, off for sqlite)")
	if err := flags.Parse(args); errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		return 2
	}
	if *parallel < 1 {
		return fail(fmt.Errorf("-parallel: %d is below 1", *parallel))
	}
	fs, err := jepsen.ParseFaults(*faults)
	if err != nil {
		return fail(err)
	}
	var stores []jepsen.Store
	switch *store {
	case "both":
		stores = []jepsen.Store{jepsen.SQLite, jepsen.Postgres}
	case "sqlite", "postgres":
		stores = []jepsen.Store{jepsen.Store(*store)}
	default:
		return fail(fmt.Errorf("-store: %q is not sqlite, postgres or both", *store))
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	dir, err := os.MkdirTemp("", "lockledger-jepsen-")
	if err != nil {
		return fail(err)
	}
	if *keep {
		fmt.Fprintln(os.Stderr, "jepsen: work directory", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	began := time.Now()
	bin := filepath.Join(dir, "lockledger")
	build := exec.Command("go", "build", "-o", bin, "github.com/lockledger/lockledger")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fail(fmt.Errorf("building the CLI: %w", err))
	}
	defer stopLeftovers(bin)
	self, err := os.Executable()
	if err != nil {
		return fail(err)
	}
	fmt.Fprintf(os.Stderr, "jepsen: seed %d\n", *seed)

	var cluster *pgtest.Cluster
	if slices.Contains(stores, jepsen.Postgres) {
		if cluster, err = pgtest.StartCluster(); errors.Is(err, pgtest.ErrNoServer) {
			fmt.Fprintln(os.Stderr, "jepsen: skipping PostgreSQL:", err)
			stores = slices.DeleteFunc(stores, func(s jepsen.Store) bool { return s == jepsen.Postgres })
		} else if err != nil {
			return fail(err)
		} else {
			defer cluster.Stop()
		}
	}
	var bouncer *pgtest.Bouncer
	if *bounced && cluster != nil {
		if bouncer, err = cluster.StartBouncer(); err != nil {
			return fail(err)
		}
		fmt.Fprintln(os.Stderr, "jepsen: the runs reach PostgreSQL through PgBouncer (transaction mode) on port", bouncer.Port)
	}
	var results []*jepsen.Result
	failed := false
	for _, st := range stores {
		for i, f := range fs {
			cdir := filepath.Join(dir, string(st)+"-"+string(f))
			if err := os.Mkdir(cdir, 0o700); err != nil {
				return fail(err)
			}
			cfg := jepsen.Config{Bin: bin, Self: self, Store: st, Dir: cdir, Fault: f, Trials: *trials,
				Duration: *duration, TakeOvers: *takeovers, Clients: *clients, Hosts: *hosts, Parallel: *parallel, TTL: storeTTL(*ttl, st), Seed: *seed + uint64(i), Fence: fenced.on(st), Progress: os.Stderr}
			if st == jepsen.Postgres {
				name := fmt.Sprintf("jepsen_%d_%d", os.Getpid(), i)
				if err := cluster.CreateDatabase(name); err != nil {
					return fail(err)
				}
				cfg.DatabaseURL = cluster.SocketURL(name)
				if bouncer != nil {
					cfg.ClientURL = bouncer.URL
				}
			}
			r, err := jepsen.RunClass(ctx, cfg)
			if err != nil {
				return fail(err)
			}
			for _, e := range r.Examples {
				fmt.Fprintln(os.Stderr, "jepsen:", e)
			}
			if f == jepsen.FaultKillAcquire {
				fmt.Fprintln(os.Stderr, "jepsen:", r.AcquireSummary())
			}
			fmt.Fprintf(os.Stderr, "jepsen: %s %s done in %v (%.1f trials/min)\n", st, f, r.Elapsed.Round(time.Second),
				float64(r.Trials)/r.Elapsed.Minutes())
			failed = failed || r.Failed()
			results = append(results, r)
		}
	}
	jepsen.WriteTable(os.Stdout, results)
	fmt.Printf("\n%d fault classes in %v (seed %d)\n", len(results), time.Since(began).Round(time.Second), *seed)
	if failed {
		return 1
	}
	return 0
}

// stopLeftovers kills the processes of bin still running when the harness
// ends: a run that lost its lock leaves a detached recorder
// (__record-loss) that retries for up to an hour, here against a cluster
// about to stop. bin is this harness's own build, in its own directory,
// so no other process has that executable.
func stopLeftovers(bin string) {
	ents, _ := os.ReadDir("/proc")
	var killed []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe == bin {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed = append(killed, pid)
			}
		}
	}
	if len(killed) == 0 {
		return
	}
	// They are not this process's children, so it cannot wait for them:
	// it watches them go, so that none is still running when it exits.
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range killed {
		for proc.Running(pid, "") && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	fmt.Fprintf(os.Stderr, "jepsen: stopped %d lockledger processes left behind (loss recorders)\n", len(killed))
}

// storeTTL is the runs' TTL on st: the one asked for, else 2s on SQLite
// and 4s on PostgreSQL. A run loses its lock when no heartbeat commits
// within TTL - 500ms; a PostgreSQL heartbeat is some fifteen round trips
// between the run and its backend inside the ledger's writer lock, and
// with 4 trials of 8 clients at once on a shared 2-core machine under
// load, 1.5s was often too little: nearly every holder lost its lock
// before its job started, and most trials went past their deadline.
func storeTTL(ttl time.Duration, st jepsen.Store) time.Duration {
	switch {
	case ttl > 0:
		return ttl
	case st == jepsen.Postgres:
		return 4 * time.Second
	}
	return 2 * time.Second
}

// fenceFlag is -fence: unset, each store's default.
type fenceFlag struct{ set, value bool }

func (f *fenceFlag) String() string {
	if f == nil || !f.set {
		return ""
	}
	return strconv.FormatBool(f.value)
}

func (f *fenceFlag) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	f.set, f.value = true, v
	return nil
}

func (f *fenceFlag) IsBoolFlag() bool { return true }

// on is whether st's jobs write through a fence: by default on
// PostgreSQL, whose fence costs a row per line, and not on SQLite, whose
// file fence syncs three times per line.
func (f *fenceFlag) on(st jepsen.Store) bool {
	if f.set {
		return f.value
	}
	return st == jepsen.Postgres
}

// fail reports err and is the exit code of a run that could not finish.
func fail(err error) int {
	fmt.Fprintln(os.Stderr, "jepsen:", err)
	return 2
}
