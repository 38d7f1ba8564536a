package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/ledger"
)

// pgBouncer: the Go API's acquire+release cycles through a PgBouncer in
// transaction pooling mode in front of c against the same directly, at 1
// and 8 clients of one ledger on distinct locks, alternated.
func pgBouncer(ctx context.Context, tmp string, c *pgtest.Cluster, newDB func(string) string) {
	const name = "PostgreSQL through PgBouncer (transaction pooling) vs directly: Go API acquire+release cycles/s, %d clients on distinct locks (median of 6 alternated)"
	b, err := c.StartBouncer()
	if errors.Is(err, pgtest.ErrNoBouncer) {
		add(row{"PostgreSQL through PgBouncer", "skipped: pgbouncer not found", "-", "-", "-", "-"})
		return
	}
	if err != nil {
		die(err)
	}
	for _, clients := range []int{1, 8} {
		direct := newDB(fmt.Sprintf("direct_%d", clients))
		bounced := b.URL(strings.TrimPrefix(mustParse(newDB(fmt.Sprintf("bounced_%d", clients))).Path, "/"))
		open := func(u, dir string) *ledger.Ledger {
			l, err := ledger.Open(ctx, filepath.Join(tmp, dir), ledger.WithDatabase(u), ledger.Unsigned(), ledger.WithPoolSize(clients+1))
			if err != nil {
				die(err)
			}
			return l
		}
		ld, lb := open(direct, fmt.Sprintf("pg-direct-%d", clients)), open(bounced, fmt.Sprintf("pg-bounced-%d", clients))
		clientsRate(ctx, ld, clients, time.Millisecond) // each lock's row made
		clientsRate(ctx, lb, clients, time.Millisecond)
		var d, bs []float64
		for range 6 {
			d = append(d, clientsRate(ctx, ld, clients, *libTime/6))
			bs = append(bs, clientsRate(ctx, lb, clients, *libTime/6))
		}
		ld.Close()
		lb.Close()
		md, mb := median(d), median(bs)
		add(row{fmt.Sprintf(name, clients), fmt.Sprintf("%.0f/s", mb), fmt.Sprintf("%.0f/s", md), fmt.Sprintf("%.0f%%", 100*mb/md),
			">= 80%", yes(mb >= 0.8*md)})
	}
}

// clientsRate runs clients goroutines for d, each cycling on a lock of its
// own, and returns their cycles per second together.
func clientsRate(ctx context.Context, l *ledger.Ledger, clients int, d time.Duration) float64 {
	var n atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for i := range clients {
		wg.Go(func() {
			lock := fmt.Sprintf("bench-%d", i)
			for time.Since(start) < d {
				a, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: lock, Identity: ledger.Identity{Actor: "bench"}})
				if err != nil {
					die(err)
				}
				if _, err := l.Release(ctx, ledger.ReleaseRequest{Lock: lock, Identity: ledger.Identity{RequestID: a.RequestID, Actor: "bench"}}); err != nil {
					die(err)
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	return float64(n.Load()) / time.Since(start).Seconds()
}
