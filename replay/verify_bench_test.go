package replay_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
)

// genLedger writes a valid n-event ledger at root with the mix of
// internal/cmd/bench (acquire, heartbeat, blocked, release, stale steals
// over nLocks locks), chained from the ledger's genesis, events only.
func genLedger(tb testing.TB, root string, n, nLocks int) (genesis string) {
	tb.Helper()
	ctx := context.Background()
	l, err := ledger.Open(ctx, root)
	if err != nil {
		tb.Fatal(err)
	}
	genesis, host := l.Genesis(), l.Host()
	l.Close()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(root, ledger.DBFile)+"?_pragma=synchronous(OFF)&_pragma=journal_mode(WAL)")
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		tb.Fatal(err)
	}
	ins, err := tx.Prepare(`INSERT INTO events (seq, event_id, type, lock_name, request_id, actor, at, body, prev_hash, hash) VALUES (?,?,?,?,?,?,?,?,?,?)`)
	if err != nil {
		tb.Fatal(err)
	}
	type lockState struct {
		holder, actor string
		pid           int
		created, beat time.Time
		token, ttl    int64
		stale         bool
	}
	rng := mrand.New(mrand.NewPCG(1, 2))
	span := 30 * 24 * time.Hour
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	step := span / time.Duration(n)
	locks := make([]lockState, nLocks)
	actors := []string{"ci-bot", "deployer", "alice", "bob", "nightly-etl", "oncall"}
	record := func(name string, s *lockState) events.Record {
		return events.Record{LockVersion: events.LockVersion, LockName: name, RequestID: s.holder, Actor: s.actor, Intent: "deploy",
			IntentVersion: "1", HostID: host.ID, PID: s.pid, CreatedAt: events.FormatLockTime(s.created),
			LastHeartbeatAt: events.FormatLockTime(s.beat), TTLSeconds: s.ttl, Metadata: map[string]string{}}
	}
	prev := genesis
	for seq := int64(1); seq <= int64(n); seq++ {
		at = at.Add(step)
		li := int(float64(nLocks) * rng.Float64() * rng.Float64())
		name := fmt.Sprintf("lock-%04d", li)
		s := &locks[li]
		actor := actors[rng.IntN(len(actors))]
		env := events.Envelope{EventID: events.NewULID(at), Seq: seq, SchemaVersion: events.SchemaVersion,
			At: events.FormatTime(at), LockName: name, Actor: actor, HostID: host.ID, PID: 1000 + rng.IntN(30000)}
		var payload any
		switch {
		case s.holder == "":
			env.Type, env.RequestID = events.LockAcquired, "req_"+env.EventID
			*s = lockState{holder: env.RequestID, actor: actor, pid: env.PID, created: at, beat: at, token: seq, ttl: 900, stale: rng.IntN(20) == 0}
			payload = &events.Acquired{TTLSeconds: 900, Intent: "deploy", IntentVersion: "1", FencingToken: seq,
				Metadata: map[string]string{}, PIDStart: "1", BootID: host.BootID}
		case s.stale && at.Sub(s.beat) > time.Duration(s.ttl)*time.Second:
			env.Type, env.RequestID = events.LockStolen, "req_"+env.EventID
			rec := record(name, s)
			sum := sha256.Sum256(rec.File())
			payload = &events.Stolen{Acquired: events.Acquired{TTLSeconds: 900, Intent: "deploy", IntentVersion: "1",
				FencingToken: seq, Metadata: map[string]string{}, PIDStart: "1", BootID: host.BootID},
				PreviousLock: rec, PreviousLockHash: "sha256:" + hex.EncodeToString(sum[:]), Reason: events.ReasonStaleForced}
			*s = lockState{holder: env.RequestID, actor: actor, pid: env.PID, created: at, beat: at, token: seq, ttl: 900}
		case s.stale:
			env.Type, env.RequestID = events.AcquireBlocked, "req_"+env.EventID
			payload = &events.Blocked{HeldBy: events.HolderOf(record(name, s)), State: events.StateHeld, WaitedSeconds: float64(rng.IntN(60))}
		default:
			switch r := rng.IntN(10); {
			case r < 5:
				env.Type, env.RequestID, env.PID, env.Actor = events.LockHeartbeat, s.holder, s.pid, s.actor
				s.beat = at
				payload = &events.Heartbeat{}
			case r < 7:
				env.Type, env.RequestID = events.AcquireBlocked, "req_"+env.EventID
				payload = &events.Blocked{HeldBy: events.HolderOf(record(name, s)), State: events.StateHeld, WaitedSeconds: float64(rng.IntN(60))}
			default:
				env.Type, env.RequestID, env.PID, env.Actor = events.LockReleased, s.holder, s.pid, s.actor
				p := &events.Released{HeldDurationSeconds: float64(at.Sub(s.created).Milliseconds()) / 1000,
					Result: events.ResultSuccess, FencingToken: s.token}
				if rng.IntN(8) == 0 {
					p.Result, p.FailureStep = events.ResultFailure, "migrate"
				}
				payload = p
				s.holder = ""
			}
		}
		ev := &events.Event{Envelope: env, Payload: payload, PrevHash: prev}
		if err := ev.Seal(); err != nil {
			tb.Fatal(err)
		}
		if _, err := ins.Exec(ev.Seq, ev.EventID, string(ev.Type), ev.LockName, ev.RequestID, ev.Actor, ev.At, ev.Body, ev.PrevHash, ev.Hash); err != nil {
			tb.Fatal(err)
		}
		prev = ev.Hash
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
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
