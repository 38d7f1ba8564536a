package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/store/sqlite"
)

// BenchmarkCycle is one acquire + release through the ledger: two
// committed transactions, each with its event, its projection row and its
// lock-file change.
func BenchmarkCycle(b *testing.B) {
	ctx := context.Background()
	l, err := Open(ctx, b.TempDir(), Unsigned())
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a, err := l.TryAcquire(ctx, AcquireRequest{Lock: "bench", Identity: Identity{Actor: "bench"}})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := l.Release(ctx, ReleaseRequest{Lock: "bench", Identity: Identity{RequestID: a.RequestID, Actor: "bench"}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCycleClients is BenchmarkCycle with several clients of one
// ledger, each on a lock of its own, on each store: the load of make
// bench's clients rows, where a group carries several decisions. Beside
// -benchmem's figures it reports the collections per 1,000 cycles, which
// is what a cycle's allocations cost at GOGC's default on a small heap,
// and this process's CPU a cycle (on PostgreSQL without the server's).
func BenchmarkCycleClients(b *testing.B) {
	for _, store := range []string{"sqlite", "postgres"} {
		for _, clients := range []int{1, 8, 32} {
			b.Run(fmt.Sprintf("%s/clients=%d", store, clients), func(b *testing.B) {
				ctx := context.Background()
				opts := []Option{Unsigned()}
				if store == "postgres" {
					opts = append(opts, WithDatabase(pgtest.NewDatabase(b)), WithPoolSize(clients+1))
				}
				l, err := Open(ctx, b.TempDir(), opts...)
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				cycle := func(lock string) error {
					a, err := l.TryAcquire(ctx, AcquireRequest{Lock: lock, Identity: Identity{Actor: "bench"}})
					if err != nil {
						return err
					}
					_, err = l.Release(ctx, ReleaseRequest{Lock: lock, Identity: Identity{RequestID: a.RequestID, Actor: "bench"}})
					return err
				}
				for i := range clients {
					// Each lock's rows made before the timing starts.
					if err := cycle(fmt.Sprintf("bench-%d", i)); err != nil {
						b.Fatal(err)
					}
				}
				var left atomic.Int64
				left.Store(int64(b.N))
				errs := make([]error, clients)
				var before, after runtime.MemStats
				var used0, used1 syscall.Rusage
				runtime.ReadMemStats(&before)
				if err := syscall.Getrusage(syscall.RUSAGE_SELF, &used0); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				var wg sync.WaitGroup
				for i := range clients {
					wg.Go(func() {
						lock := fmt.Sprintf("bench-%d", i)
						for left.Add(-1) >= 0 {
							if err := cycle(lock); err != nil {
								errs[i] = err
								return
							}
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				if err := syscall.Getrusage(syscall.RUSAGE_SELF, &used1); err != nil {
					b.Fatal(err)
				}
				runtime.ReadMemStats(&after)
				for _, err := range errs {
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(1000*float64(after.NumGC-before.NumGC)/float64(b.N), "GCs/1000cycles")
				cpu := func(u syscall.Rusage) time.Duration {
					return time.Duration(u.Utime.Nano() + u.Stime.Nano())
				}
				b.ReportMetric(float64((cpu(used1)-cpu(used0)).Microseconds())/float64(b.N), "cpu-µs/cycle")
			})
		}
	}
}

// BenchmarkRawTwoCommits is the physical reference for BenchmarkCycle: the
// same database settings (WAL, synchronous=FULL, BEGIN IMMEDIATE) on the
// same file system, two single-row committed transactions per cycle.
func BenchmarkRawTwoCommits(b *testing.B) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", sqlite.DSN(filepath.Join(b.TempDir(), "raw.db"), DefaultBusyTimeout))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB)`); err != nil {
		b.Fatal(err)
	}
	row := make([]byte, 600) // about one event body
	commit := func(q string, args ...any) {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		commit(`INSERT INTO t (v) VALUES (?)`, row)
		commit(`INSERT INTO t (v) VALUES (?)`, row)
	}
}

// BenchmarkOpenDetach is what every writing CLI process does before and
// after its decision: open an existing ledger (one connection, the checks
// of its tables, settings and schema version, its id) and detach.
func BenchmarkOpenDetach(b *testing.B) {
	ctx := context.Background()
	root := b.TempDir()
	l, err := Open(ctx, root, Unsigned())
	if err != nil {
		b.Fatal(err)
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l, err := Open(ctx, root, MustExist(), Unsigned())
		if err != nil {
			b.Fatal(err)
		}
		// Close rather than Detach: the benchmark's process stays, and
		// each Open must find the ledger as the next process would.
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
