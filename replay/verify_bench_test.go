package replay_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
)

// genLedger writes internal/cmd/bench's fixture mix (n events over nLocks
// locks, 30 days from 2026-01-01) at root and returns its genesis.
func genLedger(tb testing.TB, root string, n, nLocks int) (genesis string) {
	tb.Helper()
	genesis, _, err := fixture.Ledger{Events: n, Locks: nLocks, Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Span: 30 * 24 * time.Hour}.Write(root)
	if err != nil {
		tb.Fatal(err)
	}
	return genesis
}

// BenchmarkVerifyLedger runs VerifyLedger over a generated ledger
// (LOCKLEDGER_BENCH_EVENTS events, 50000 by default) next to the raw scan
// that internal/cmd/bench compares it with: every row read in seq order and
// its sha256 link recomputed.
//
//	go test -run '^$' -bench VerifyLedger -cpuprofile cpu.out ./replay
func BenchmarkVerifyLedger(b *testing.B) {
	n := 50000
	if s := os.Getenv("LOCKLEDGER_BENCH_EVENTS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	root := b.TempDir()
	genesis := genLedger(b, root, n, 1000)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(root, ledger.DBFile)+"?mode=ro")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	b.Run("verify", func(b *testing.B) {
		cpu := cpuTime()
		for b.Loop() {
			tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
			if err != nil {
				b.Fatal(err)
			}
			rep, _, err := replay.VerifyLedger(ctx, tx, "bench", genesis)
			_ = tx.Rollback()
			if err != nil {
				b.Fatal(err)
			}
			rep.Finish()
			if !rep.OK || rep.Events != int64(n) {
				b.Fatalf("verify: ok=%v events=%d problems=%v", rep.OK, rep.Events, rep.Problems)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/event")
		b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N)/float64(n), "cpu-ns/event")
	})
	b.Run("rawscan", func(b *testing.B) {
		cpu := cpuTime()
		for b.Loop() {
			rows, err := db.QueryContext(ctx, `SELECT seq, prev_hash, body, hash FROM events ORDER BY seq`)
			if err != nil {
				b.Fatal(err)
			}
			bad := 0
			for rows.Next() {
				var seq int64
				var prev, hash string
				var body []byte
				if err := rows.Scan(&seq, &prev, &body, &hash); err != nil {
					b.Fatal(err)
				}
				if events.ChainHash(seq, prev, body) != hash {
					bad++
				}
			}
			if err := rows.Err(); err != nil || bad > 0 {
				b.Fatal(err, bad)
			}
			rows.Close()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/event")
		b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N)/float64(n), "cpu-ns/event")
	})
}

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
