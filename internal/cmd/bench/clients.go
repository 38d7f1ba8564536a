package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/ledger"
)

var cpuProfile = flag.String("cpuprofile", "", "write a CPU profile of the clients rows (Go API on distinct locks) to this file")

// clientCounts are the clients of the scaling rows of each store.
var (
	pgClientCounts     = []int{1, 8, 32, 64}
	sqliteClientCounts = []int{1, 4, 16, 64}
)

// clientsResult is one scaling measurement: cycles per second, how many,
// and every acquire's latency.
type clientsResult struct {
	rate   float64
	cycles int64
	lat    []time.Duration
}

// profiled runs f under the -cpuprofile, if one is asked for: the
// profile covers every clients row of the run, appended file by file.
func profiled(what string, f func()) {
	if *cpuProfile == "" {
		f()
		return
	}
	path := *cpuProfile + "." + what
	out, err := os.Create(path)
	if err != nil {
		die(err)
	}
	defer out.Close()
	if err := pprof.StartCPUProfile(out); err != nil {
		die(err)
	}
	defer pprof.StopCPUProfile()
	fmt.Fprintln(os.Stderr, "  CPU profile:", path)
	f()
}

// clientsCycles runs clients goroutines for d, each cycling on a lock of
// its own, and returns their cycles per second together and every
// acquire's latency (an uncontended acquire: nobody else wants the lock).
func clientsCycles(ctx context.Context, l *ledger.Ledger, clients int, d time.Duration) clientsResult {
	var n atomic.Int64
	var wg sync.WaitGroup
	lats := make([][]time.Duration, clients)
	start := time.Now()
	for i := range clients {
		wg.Go(func() {
			lock := fmt.Sprintf("bench-%d", i)
			for time.Since(start) < d {
				t := time.Now()
				a, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: lock, Identity: ledger.Identity{Actor: "bench"}})
				if err != nil {
					die(err)
				}
				lats[i] = append(lats[i], time.Since(t))
				if _, err := l.Release(ctx, ledger.ReleaseRequest{Lock: lock, Identity: ledger.Identity{RequestID: a.RequestID, Actor: "bench"}}); err != nil {
					die(err)
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	return clientsResult{rate: float64(n.Load()) / time.Since(start).Seconds(), cycles: n.Load(), lat: slices.Concat(lats...)}
}

// clientsRate is clientsCycles' rate.
func clientsRate(ctx context.Context, l *ledger.Ledger, clients int, d time.Duration) float64 {
	return clientsCycles(ctx, l, clients, d).rate
}

// rawClients runs clients goroutines for d, each committing two rows a
// cycle, and returns their cycles per second together, and how many.
func rawClients(clients int, d time.Duration, commit func()) clientsResult {
	var n atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for time.Since(start) < d {
				commit()
				commit()
				n.Add(1)
			}
		})
	}
	wg.Wait()
	return clientsResult{rate: float64(n.Load()) / time.Since(start).Seconds(), cycles: n.Load()}
}

// p99 of latencies (sorted here).
func p99(lat []time.Duration) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	slices.Sort(lat)
	return lat[int(0.99*float64(len(lat)-1))]
}

// scaling is what one store's clients rows measured: for each client
// count, the ledger's rates, the raw reference's, the acquire latencies
// of all rounds, and what the rounds of each cost in CPU.
type scaling struct {
	clients []int
	server  int // the database server's process, 0 for none
	lib     map[int][]float64
	raw     map[int][]float64
	lat     map[int][]time.Duration
	libCPU  map[int]spent
	rawCPU  map[int]spent
}

// spent is what rounds of cycles cost together: the cycles, the wall
// time and the CPU charged.
type spent struct {
	cycles int64
	wall   time.Duration
	cpu    charged
}

func newScaling(clients []int, server int) *scaling {
	return &scaling{clients: clients, server: server, lib: map[int][]float64{}, raw: map[int][]float64{}, lat: map[int][]time.Duration{},
		libCPU: map[int]spent{}, rawCPU: map[int]spent{}}
}

// round runs one round of the ledger's cycles at clients, then one of the
// raw reference's, and keeps their rates, the ledger's latencies and
// what each cost.
func (s *scaling) round(clients int, lib, raw func() clientsResult) {
	timed := func(f func() clientsResult, into map[int]spent) clientsResult {
		c0, t0 := chargedNow(s.server), time.Now()
		r := f()
		sp := into[clients]
		into[clients] = spent{sp.cycles + r.cycles, sp.wall + time.Since(t0), sp.cpu.plus(chargedNow(s.server).minus(c0))}
		return r
	}
	r := timed(lib, s.libCPU)
	s.lib[clients] = append(s.lib[clients], r.rate)
	s.lat[clients] = append(s.lat[clients], r.lat...)
	s.raw[clients] = append(s.raw[clients], timed(raw, s.rawCPU).rate)
}

// rows adds the rows of s: each client count against the raw reference
// (the target where want50 says so), no collapse from low to the highest
// count, and the p99 of an uncontended acquire at p99At clients.
func (s *scaling) rows(store string, want50 []int, low, p99At int) {
	for _, c := range s.clients {
		ml, mr := median(s.lib[c]), median(s.raw[c])
		target, verdict := "report", "-"
		if slices.Contains(want50, c) {
			target, verdict = ">= 50%", yes(ml >= 0.5*mr)
		}
		add(row{fmt.Sprintf("%s: Go API acquire+release cycles/s, %d clients of one ledger on distinct locks, vs raw 2-commit cycles/s at %d clients (median of 6 alternated)", store, c, c),
			fmt.Sprintf("%.0f/s", ml), fmt.Sprintf("%.0f/s", mr), fmt.Sprintf("%.0f%%", 100*ml/mr), target, verdict})
		s.ceiling(store, c)
	}
	high := s.clients[len(s.clients)-1]
	mh, ml := median(s.lib[high]), median(s.lib[low])
	add(row{fmt.Sprintf("%s: Go API cycles/s at %d clients vs at %d (no collapse)", store, high, low),
		fmt.Sprintf("%.0f/s", mh), fmt.Sprintf("%.0f/s", ml), fmt.Sprintf("%.0f%%", 100*mh/ml), ">= 100%", yes(mh >= ml)})
	if p99At > 0 {
		p := p99(s.lat[p99At])
		add(row{fmt.Sprintf("%s: p99 of an uncontended acquire at %d clients", store, p99At), ms(p), "-", "-", "<= 50 ms", yes(p <= 50*time.Millisecond)})
	}
}

// ceiling adds the two rows that say where the rate at clients is bound:
// the CPU a cycle costs (this process, which holds the clients and, for
// SQLite, the database; and the server's processes) against the raw
// reference's, and how many of the machine's cores each kept busy, with
// the rate the ledger would reach were every core busy at its CPU a cycle,
// as a share of the raw reference's measured rate. A bound under 50% says
// the CPU a cycle must fall for the target to be in reach here; a bound
// over it with cores left idle says the serialised part of a write is
// what holds the rate.
func (s *scaling) ceiling(store string, c int) {
	l, r := s.libCPU[c], s.rawCPU[c]
	if l.cycles == 0 || r.cycles == 0 {
		return
	}
	perCycle := func(sp spent) (time.Duration, string) {
		all := sp.cpu.self + sp.cpu.server
		per := all / time.Duration(sp.cycles)
		if !sp.cpu.serverOK {
			return per, ms(per)
		}
		return per, fmt.Sprintf("%s (%s + %s)", ms(per), ms(sp.cpu.self/time.Duration(sp.cycles)), ms(sp.cpu.server/time.Duration(sp.cycles)))
	}
	lp, ls := perCycle(l)
	rp, rs := perCycle(r)
	parts := "this process"
	if l.cpu.serverOK {
		parts = "this process + the server's"
	}
	add(row{fmt.Sprintf("%s, %d clients: CPU a cycle (%s), ledger vs raw", store, c, parts), ls, rs, fmt.Sprintf("%.2fx", float64(lp)/float64(rp)), "report", "-"})
	cores := runtime.NumCPU()
	busy := func(sp spent) float64 { return float64(sp.cpu.self+sp.cpu.server) / float64(sp.wall) }
	bound := float64(cores) * float64(time.Second) / float64(lp)
	rawRate := float64(r.cycles) / r.wall.Seconds()
	add(row{fmt.Sprintf("%s, %d clients: cores kept busy, ledger vs raw; the ledger's rate were all %d busy at its CPU a cycle, vs raw's rate", store, c, cores),
		fmt.Sprintf("%.2f (bound %.0f/s)", busy(l), bound), fmt.Sprintf("%.2f (%.0f/s)", busy(r), rawRate), fmt.Sprintf("%.0f%%", 100*bound/rawRate), "report", "-"})
}

// pgClients: the Go API's cycles at 1, 8, 32 and 64 clients of one
// ledger on distinct locks, directly, through a PgBouncer in transaction
// pooling mode in front of c (when there is one), and the raw reference
// (pgx, two one-row commits per cycle), alternated.
func pgClients(ctx context.Context, tmp string, c *pgtest.Cluster, newDB func(string) string) {
	const name = "PostgreSQL through PgBouncer (transaction pooling) vs directly: Go API acquire+release cycles/s, %d clients on distinct locks (median of 6 alternated)"
	var b *pgtest.Bouncer
	if c != nil {
		var err error
		b, err = c.StartBouncer()
		if errors.Is(err, pgtest.ErrNoBouncer) {
			add(row{"PostgreSQL through PgBouncer", "skipped: pgbouncer not found", "-", "-", "-", "-"})
		} else if err != nil {
			die(err)
		}
	} else {
		add(row{"PostgreSQL through PgBouncer", "skipped: measured on the cluster the bench starts, not with -database", "-", "-", "-", "-"})
	}
	server := 0
	if c != nil {
		server = c.PID()
	}
	s := newScaling(pgClientCounts, server)
	profiled("pg", func() {
		for _, clients := range pgClientCounts {
			open := func(u, dir string) *ledger.Ledger {
				l, err := ledger.Open(ctx, filepath.Join(tmp, dir), ledger.WithDatabase(u), ledger.Unsigned(), ledger.WithPoolSize(clients+1))
				if err != nil {
					die(err)
				}
				return l
			}
			ld := open(newDB(fmt.Sprintf("direct_%d", clients)), fmt.Sprintf("pg-direct-%d", clients))
			raw := openRaw(ctx, newDB(fmt.Sprintf("raw_%d", clients)))
			raw.SetMaxOpenConns(clients)
			raw.SetMaxIdleConns(clients)
			commit := pgRawCommit(ctx, raw)
			var lb *ledger.Ledger
			if b != nil {
				lb = open(b.URL(strings.TrimPrefix(mustParse(newDB(fmt.Sprintf("bounced_%d", clients))).Path, "/")), fmt.Sprintf("pg-bounced-%d", clients))
				clientsRate(ctx, lb, clients, time.Millisecond) // each lock's row made
			}
			clientsRate(ctx, ld, clients, time.Millisecond)
			rawClients(clients, time.Millisecond, commit)
			var bs []float64
			for range 6 {
				s.round(clients, func() clientsResult { return clientsCycles(ctx, ld, clients, *libTime/6) },
					func() clientsResult { return rawClients(clients, *libTime/6, commit) })
				if lb != nil {
					bs = append(bs, clientsRate(ctx, lb, clients, *libTime/6))
				}
			}
			ld.Close()
			raw.Close()
			if lb != nil {
				lb.Close()
				md, mb := median(s.lib[clients]), median(bs)
				add(row{fmt.Sprintf(name, clients), fmt.Sprintf("%.0f/s", mb), fmt.Sprintf("%.0f/s", md), fmt.Sprintf("%.0f%%", 100*mb/md),
					">= 80%", yes(mb >= 0.8*md)})
			}
		}
	})
	s.rows("PostgreSQL", []int{8, 32}, 8, 32)
}

// pgRawCommit is one reference row committed through db: an event's
// columns and size, the next seq of this run.
func pgRawCommit(ctx context.Context, db *sql.DB) func() {
	body := make([]byte, rawBody)
	for i := range body {
		body[i] = 'x'
	}
	var seq atomic.Int64
	return func() {
		n := seq.Add(1)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			die(err)
		}
		id := fmt.Sprintf("%032x", n)
		if _, err := tx.ExecContext(ctx, `INSERT INTO events (seq, event_id, type, lock_name, request_id, actor, at, body, prev_hash, hash)
			VALUES ($1, $2, 'acquire', 'bench', $3, 'bench', $4, $5, $6, $7)`,
			n, id, id, time.Now().UTC().Format(time.RFC3339Nano), body, strings.Repeat("0", 64), strings.Repeat("1", 64)); err != nil {
			die(err)
		}
		if err := tx.Commit(); err != nil {
			die(err)
		}
	}
}

// sqliteClients: the Go API's cycles at 1, 4, 16 and 64 clients of one
// ledger on distinct locks against the raw reference (the events table's
// columns and indexes, one row per commit, two commits per cycle, the
// same clients on one pool), alternated.
func sqliteClients(tmp string) {
	ctx := context.Background()
	s := newScaling(sqliteClientCounts, 0)
	profiled("sqlite", func() {
		for _, clients := range sqliteClientCounts {
			l, err := ledger.Open(ctx, filepath.Join(tmp, fmt.Sprintf("clients-%d", clients)), ledger.Unsigned())
			if err != nil {
				die(err)
			}
			idx, err := indexedRaw(ctx, l, filepath.Join(tmp, fmt.Sprintf("raw-clients-%d.db", clients)))
			if err != nil {
				die(err)
			}
			commit := func() { idx.commit(ctx) }
			clientsRate(ctx, l, clients, time.Millisecond)
			for range 6 {
				s.round(clients, func() clientsResult { return clientsCycles(ctx, l, clients, *libTime/6) },
					func() clientsResult { return rawClients(clients, *libTime/6, commit) })
			}
			l.Close()
			idx.db.Close()
		}
	})
	s.rows("SQLite", []int{1, 4, 16}, 4, 0)
	p := p99(s.lat[16])
	add(row{"SQLite: p99 of an uncontended acquire at 16 clients", ms(p), "-", "-", "report", "-"})
}
