package main

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/ledger"
)

// generate writes a valid n-event ledger at root: a realistic mix of
// acquire, heartbeat, blocked, release (success and failure) and stale
// steals over nLocks locks and span, chained from the ledger's genesis.
// It writes events only; `lockledger project` then builds the projections,
// so the fixture is exactly what the event log implies.
func generate(root string, n, nLocks int, span time.Duration) (day time.Time, busiest string) {
	ctx := context.Background()
	l, err := ledger.Open(ctx, root)
	if err != nil {
		die(err)
	}
	genesis, host := l.Genesis(), l.Host()
	l.Close()
	// Bulk load with the same schema and chain, without per-row fsync:
	// this is fixture generation, not the product's write path.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(root, ledger.DBFile)+"?_pragma=synchronous(OFF)&_pragma=journal_mode(WAL)")
	if err != nil {
		die(err)
	}
	defer db.Close()
	rng := mrand.New(mrand.NewPCG(1, 2))
	end := time.Now().UTC().Add(-time.Hour)
	start := end.Add(-span)
	step := span / time.Duration(n)
	type lockState struct {
		holder  string
		actor   string
		pid     int
		created time.Time
		beat    time.Time
		token   int64
		ttl     int64
		stale   bool
	}
	locks := make([]lockState, nLocks)
	seq, prev := int64(0), genesis
	tx, err := db.Begin()
	if err != nil {
		die(err)
	}
	ins, err := tx.Prepare(`INSERT INTO events (seq, event_id, type, lock_name, request_id, actor, at, body, prev_hash, hash) VALUES (?,?,?,?,?,?,?,?,?,?)`)
	if err != nil {
		die(err)
	}
	actors := []string{"ci-bot", "deployer", "alice", "bob", "nightly-etl", "oncall"}
	at := start
	counts := make([]int, nLocks)
	for seq < int64(n) {
		at = at.Add(step)
		// Busy locks are busier: a Zipf-ish pick.
		li := int(float64(nLocks) * rng.Float64() * rng.Float64())
		name := fmt.Sprintf("lock-%04d", li)
		s := &locks[li]
		actor := actors[rng.IntN(len(actors))]
		env := events.Envelope{EventID: events.NewULID(at), Seq: seq + 1, SchemaVersion: events.SchemaVersion,
			At: events.FormatTime(at), LockName: name, Actor: actor, HostID: host.ID, PID: 1000 + rng.IntN(30000)}
		var payload any
		switch {
		case s.holder == "":
			env.Type, env.RequestID = events.LockAcquired, "req_"+env.EventID
			s.holder, s.actor, s.pid, s.created, s.beat, s.token, s.ttl, s.stale = env.RequestID, actor, env.PID, at, at, env.Seq, 900, rng.IntN(20) == 0
			payload = &events.Acquired{TTLSeconds: s.ttl, Intent: "deploy", IntentVersion: "1", FencingToken: env.Seq,
				Metadata: map[string]string{}, PIDStart: "1", BootID: host.BootID}
		case s.stale && at.Sub(s.beat) > time.Duration(s.ttl)*time.Second:
			env.Type, env.RequestID = events.LockStolen, "req_"+env.EventID
			prevRec := record(name, s.holder, s.actor, host.ID, s.pid, s.created, s.beat, s.ttl)
			sum := sha256.Sum256(prevRec.File())
			payload = &events.Stolen{Acquired: events.Acquired{TTLSeconds: 900, Intent: "deploy", IntentVersion: "1",
				FencingToken: env.Seq, Metadata: map[string]string{}, PIDStart: "1", BootID: host.BootID},
				PreviousLock: prevRec, PreviousLockHash: "sha256:" + hex.EncodeToString(sum[:]), Reason: events.ReasonStaleForced}
			s.holder, s.actor, s.pid, s.created, s.beat, s.token, s.ttl, s.stale = env.RequestID, actor, env.PID, at, at, env.Seq, 900, false
		case s.stale:
			env.Type, env.RequestID = events.AcquireBlocked, "req_"+env.EventID
			payload = &events.Blocked{HeldBy: events.HolderOf(record(name, s.holder, s.actor, host.ID, s.pid, s.created, s.beat, s.ttl)),
				State: events.StateHeld, WaitedSeconds: float64(rng.IntN(60))}
		default:
			switch r := rng.IntN(10); {
			case r < 5:
				env.Type, env.RequestID, env.PID, env.Actor = events.LockHeartbeat, s.holder, s.pid, s.actor
				s.beat = at
				payload = &events.Heartbeat{}
			case r < 7:
				env.Type, env.RequestID = events.AcquireBlocked, "req_"+env.EventID
				payload = &events.Blocked{HeldBy: events.HolderOf(record(name, s.holder, s.actor, host.ID, s.pid, s.created, s.beat, s.ttl)),
					State: events.StateHeld, WaitedSeconds: float64(rng.IntN(60))}
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
			die(err)
		}
		if _, err := ins.Exec(ev.Seq, ev.EventID, string(ev.Type), ev.LockName, ev.RequestID, ev.Actor, ev.At, ev.Body, ev.PrevHash, ev.Hash); err != nil {
			die(err)
		}
		seq, prev = ev.Seq, ev.Hash
		counts[li]++
		if seq%50000 == 0 {
			if err := tx.Commit(); err != nil {
				die(err)
			}
			if tx, err = db.Begin(); err != nil {
				die(err)
			}
			if ins, err = tx.Prepare(`INSERT INTO events (seq, event_id, type, lock_name, request_id, actor, at, body, prev_hash, hash) VALUES (?,?,?,?,?,?,?,?,?,?)`); err != nil {
				die(err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		die(err)
	}
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		die(err)
	}
	best := 0
	for i, c := range counts {
		if c > counts[best] {
			best = i
		}
	}
	return end.Add(-span / 2).Truncate(24 * time.Hour), fmt.Sprintf("lock-%04d", best)
}

func record(name, rid, actor, host string, pid int, created, beat time.Time, ttl int64) events.Record {
	return events.Record{LockVersion: events.LockVersion, LockName: name, RequestID: rid, Actor: actor, Intent: "deploy",
		IntentVersion: "1", HostID: host, PID: pid, CreatedAt: events.FormatLockTime(created),
		LastHeartbeatAt: events.FormatLockTime(beat), TTLSeconds: ttl, Metadata: map[string]string{}}
}

// runCLI runs lockledger and returns its wall time and peak RSS.
func runCLI(root string, args ...string) (time.Duration, int64) {
	c := exec.Command(*bin, append([]string{"--log-level", "error"}, args...)...)
	c.Env = append(os.Environ(), "LOCKLEDGER_ROOT="+root, "NO_COLOR=1")
	c.Stdout = nil
	s := time.Now()
	if out, err := c.CombinedOutput(); err != nil {
		die(fmt.Errorf("lockledger %v: %v\n%s", args, err, out))
	}
	took := time.Since(s)
	rss := c.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // KiB on Linux
	return took, rss
}

// rawScan is the physical reference for verify: read every row in seq
// order and recompute its sha256 link.
func rawScan(root string) time.Duration {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(root, ledger.DBFile)+"?mode=ro")
	if err != nil {
		die(err)
	}
	defer db.Close()
	s := time.Now()
	rows, err := db.Query(`SELECT seq, prev_hash, body, hash FROM events ORDER BY seq`)
	if err != nil {
		die(err)
	}
	bad := 0
	for rows.Next() {
		var seq int64
		var prev, hash string
		var body []byte
		if err := rows.Scan(&seq, &prev, &body, &hash); err != nil {
			die(err)
		}
		if events.ChainHash(seq, prev, body) != hash {
			bad++
		}
	}
	if err := rows.Err(); err != nil {
		die(err)
	}
	rows.Close()
	if bad > 0 {
		die(fmt.Errorf("fixture has %d bad hashes", bad))
	}
	return time.Since(s)
}

func benchScale(tmp string) {
	root := filepath.Join(tmp, "scale")
	s := time.Now()
	day, lock := generate(root, *nEvents, 1000, 30*24*time.Hour)
	fmt.Fprintf(os.Stderr, "  generated %d events in %s\n", *nEvents, time.Since(s).Round(time.Millisecond))
	if took, _ := runCLI(root, "project"); true {
		fmt.Fprintf(os.Stderr, "  project rebuilt the projections in %s\n", took.Round(time.Millisecond))
	}
	// verify against the raw scan, alternated, best of 3 each.
	var v, r time.Duration
	for i := 0; i < 3; i++ {
		vt, _ := runCLI(root, "verify")
		rt := rawScan(root)
		if i == 0 || vt < v {
			v = vt
		}
		if i == 0 || rt < r {
			r = rt
		}
	}
	ratio := float64(v) / float64(r)
	add(row{fmt.Sprintf("`verify` of %d events vs raw scan + sha256 of the same rows (best of 3)", *nEvents),
		ms(v), ms(r), fmt.Sprintf("%.2fx", ratio), "<= 1.5x", yes(ratio <= 1.5)})

	var tl []time.Duration
	for i := 0; i < 9; i++ {
		t, _ := runCLI(root, "timeline", "--lock", lock, "--since", day.Format(time.RFC3339),
			"--until", day.Add(24*time.Hour).Format(time.RFC3339), "--format", "jsonl")
		tl = append(tl, t)
	}
	add(row{"`timeline --lock L --since/--until` one day, whole command (median of 9)", ms(median(tl)), "-", "-", "< 20 ms", yes(median(tl) < 20*time.Millisecond)})

	_, rss := runCLI(root, "replay", "--as-of", day.Format(time.RFC3339), "--json")
	add(row{"`replay --as-of` peak RSS", fmt.Sprintf("%.1f MiB", float64(rss)/1024), "-", "-", "< 64 MiB", yes(rss < 64*1024)})

	out := filepath.Join(tmp, "export.jsonl")
	et, _ := runCLI(root, "export", "--format", "jsonl", "-o", out)
	fi, _ := os.Stat(out)
	size := int64(0)
	if fi != nil {
		size = fi.Size()
	}
	add(row{"`export --format jsonl` of the whole ledger", fmt.Sprintf("%s (%.0f MiB)", ms(et), float64(size)/(1<<20)), "-", "-", "report", "-"})
}
