package replay_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/internal/testclock"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
)

var base = time.Date(2025, 3, 14, 10, 0, 0, 0, time.UTC)

// step is the projection after one operation, at that operation's instant.
type step struct {
	at     time.Time
	op     string
	table  map[string]tableRow
	shared map[string]string // lock_holders, per lock (see snapshotShared)
}

// TestReplayAsOfEqualsProjection applies random operation sequences through
// the ledger API with a scripted clock (acquires, forced and blocked ones,
// heartbeats, releases by holders, strangers and --force, steals active and
// superseding, dead holders, foreign lock files), snapshots the locks table
// after every step, and checks that replay as of each step's instant, from
// the events alone, equals that snapshot: held rows column for column,
// including the lock file bytes, and free rows free.
func TestReplayAsOfEqualsProjection(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			steps, l := randomHistory(t, seed, 160)
			db := pgtest.Open(t, l.Source())
			ctx := context.Background()
			requireCoverage(t, l)
			// The whole history verifies, and project finds nothing to change.
			rep, err := l.Verify(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK {
				t.Fatalf("verify of a ledger's own history: %+v", rep.Problems)
			}
			if pr, err := l.Project(ctx); err != nil || pr.Changed() {
				t.Fatalf("project of a consistent ledger: %+v, %v", pr, err)
			}
			for i, s := range steps {
				st, err := replay.AsOf(ctx, db, s.at, "")
				if err != nil {
					t.Fatal(err)
				}
				if err := sameAsTable(st, s.table); err != nil {
					t.Fatalf("step %d (%s at %s): %v", i, s.op, events.FormatTime(s.at), err)
				}
				if got, want := s.shared, sharedOfReplay(st); mustJSON(got) != mustJSON(want) {
					t.Fatalf("step %d (%s): lock_holders %v, replay's shared holders %v", i, s.op, got, want)
				}
				if st.AnomalyCount != 0 {
					t.Fatalf("step %d: anomalies in a ledger's own log: %+v", i, st.Anomalies)
				}
				// One lock alone (events_lock_at) folds to the same lock.
				for name := range s.table {
					one, err := replay.AsOf(ctx, db, s.at, name)
					if err != nil {
						t.Fatal(err)
					}
					if a, b := mustJSON(one.Lock(name)), mustJSON(st.Lock(name)); a != b {
						t.Fatalf("step %d: lock %s alone %s, in the whole log %s", i, name, a, b)
					}
				}
			}
		})
	}
}

func sameAsTable(st *replay.State, table map[string]tableRow) error {
	for _, lk := range st.Locks() {
		r, ok := table[lk.Name]
		if lk.Holder == nil {
			if ok {
				return fmt.Errorf("lock %s: a table row but replay never saw a ledger holder", lk.Name)
			}
			continue
		}
		if !ok {
			return fmt.Errorf("lock %s: replay has a holder, the table no row", lk.Name)
		}
		if r.Held != lk.Held {
			return fmt.Errorf("lock %s: table held=%v, replay held=%v", lk.Name, r.Held, lk.Held)
		}
		if !lk.Held {
			continue
		}
		h := lk.Holder
		md := mustJSON(h.Record.Metadata)
		want := tableRow{Name: lk.Name, Held: true, RequestID: h.Record.RequestID, Actor: h.Record.Actor,
			Intent: h.Record.Intent, IntentVersion: h.Record.IntentVersion, HostID: h.Record.HostID, PID: h.Record.PID,
			PIDStart: h.PIDStart, BootID: h.BootID, CreatedAt: events.FormatTime(h.Created),
			HeartbeatAt: events.FormatTime(h.Heartbeat), TTL: h.Record.TTLSeconds, Metadata: md, Token: h.Token,
			UpdatedSeq: lk.UpdatedSeq, File: h.File(), Targets: mustJSON(h.Targets)}
		if !bytes.Equal(want.File, r.File) {
			return fmt.Errorf("lock %s: file\n%s\nreplay\n%s", lk.Name, r.File, want.File)
		}
		want.File, r.File = nil, nil
		if mustJSON(want) != mustJSON(r) {
			return fmt.Errorf("lock %s:\n table  %+v\n replay %+v", lk.Name, r, want)
		}
	}
	for name := range table {
		if st.Lock(name) == nil {
			return fmt.Errorf("lock %s: a table row, no event in replay", name)
		}
	}
	return nil
}

// snapshotShared is lock_holders' shared rows as one line per lock: each holder's
// request, fencing token, limit and last heartbeat, by request id.
func snapshotShared(t *testing.T, db *sql.DB) map[string]string {
	t.Helper()
	rows, err := db.Query(`SELECT lock_name, request_id, fencing_token, slot_limit, heartbeat_at FROM lock_holders
		WHERE exclusive = 0 ORDER BY lock_name, request_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var lock, req, hb string
		var token, limit int64
		if err := rows.Scan(&lock, &req, &token, &limit, &hb); err != nil {
			t.Fatal(err)
		}
		out[lock] += fmt.Sprintf("%s:%d:%d:%s ", req, token, limit, hb)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func sharedOfReplay(st *replay.State) map[string]string {
	out := map[string]string{}
	for _, lk := range st.Locks() {
		for _, h := range lk.Shared {
			out[lk.Name] += fmt.Sprintf("%s:%d:%d:%s ", h.Record.RequestID, h.Token, lk.Limit, events.FormatTime(h.Heartbeat))
		}
	}
	return out
}

type actorID struct {
	name string
	pid  int
}

func randomHistory(t *testing.T, seed uint64, n int) ([]step, *ledger.Ledger) {
	rng := rand.New(rand.NewPCG(seed, 99))
	rs := rand.New(rand.NewPCG(seed, 7))
	var sharedReqs []string
	c := testclock.New(base)
	p := &probe{gone: map[int]bool{}}
	root := t.TempDir()
	ext := t.TempDir()
	l := openScripted(t, root, c, p)
	db := pgtest.Open(t, l.Source())
	ctx := context.Background()
	locks := []string{"app-prod", "db-migrate", "nightly"}
	actors := []actorID{{"alice", 101}, {"bob", 102}, {"carol", 103}, {"dave", 104}}
	var reqs []string             // every request id used so far
	took := map[string][]string{} // the requests that took each lock: a heartbeat of one that lost it is a loss
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	var steps []step
	// holderOr is the lock's current ledger holder's request most of the
	// time (so that heartbeats and releases succeed), else a request that
	// took that lock, else any request.
	holderOr := func(lock string) string {
		if len(steps) > 0 && rng.IntN(3) > 0 {
			if r, ok := steps[len(steps)-1].table[lock]; ok && r.Held {
				return r.RequestID
			}
		}
		if len(took[lock]) > 0 && rng.IntN(2) == 0 {
			return pick(took[lock])
		}
		return pick(reqs)
	}
	for i := range n {
		// Mostly short steps, sometimes long enough for TTLs to run out.
		d := time.Duration(1+rng.IntN(5000)) * time.Millisecond
		if rng.IntN(6) == 0 {
			d = time.Duration(30+rng.IntN(200)) * time.Second
		}
		now := c.Add(d)
		lock := pick(locks)
		a := actors[rng.IntN(len(actors))]
		id := ledger.Identity{Actor: a.name, PID: a.pid, RequestID: fmt.Sprintf("req-%d-%d", seed, i)}
		var op string
		var err error
		switch k := rng.IntN(100); {
		case k < 30:
			op = "acquire"
			req := ledger.AcquireRequest{Lock: lock, Identity: id, TTL: time.Duration(5+rng.IntN(60)) * time.Second,
				Intent: pick([]string{"", "deploy", "migrate"}), IntentVersion: pick([]string{"", "v1", "v2"}),
				Force: rng.IntN(3) == 0, RecordBlocked: rng.IntN(2) == 0, Waited: time.Duration(rng.IntN(3000)) * time.Millisecond}
			if rng.IntN(2) == 0 {
				req.Metadata = map[string]string{"ticket": fmt.Sprint("INC-", i), "note": "<a&b>"}
			}
			if rng.IntN(3) == 0 { // also project the lock in other tools' formats
				req.Targets = []events.Target{
					{Format: "tower-fleet", Path: filepath.Join(ext, lock+".lock")},
					{Format: pick([]string{"bso", "beads"}), Path: filepath.Join(ext, lock+".other")},
				}
			}
			_, err = l.TryAcquire(ctx, req)
			reqs = append(reqs, id.RequestID)
			if err == nil {
				took[lock] = append(took[lock], id.RequestID)
			}
		case k < 50 && len(reqs) > 0:
			op = "heartbeat"
			id.RequestID = holderOr(lock)
			_, err = l.Heartbeat(ctx, lock, id)
		case k < 68 && len(reqs) > 0:
			op = "release"
			id.RequestID = holderOr(lock)
			req := ledger.ReleaseRequest{Lock: lock, Identity: id, Result: pick([]string{"success", "failure", "cancelled"}),
				Force: rng.IntN(4) == 0}
			if req.Result == "failure" {
				req.FailureStep = "migrate"
			}
			_, err = l.Release(ctx, req)
		case k < 76:
			op = "steal"
			_, err = l.Steal(ctx, ledger.StealRequest{AcquireRequest: ledger.AcquireRequest{Lock: lock, Identity: id,
				TTL: 20 * time.Second}, Note: "test", Active: rng.IntN(2) == 0, Supersede: rng.IntN(4) == 0})
			reqs = append(reqs, id.RequestID)
			if err == nil {
				took[lock] = append(took[lock], id.RequestID)
			}
		case k < 84:
			op = "kill/revive"
			v := actors[rng.IntN(len(actors))]
			p.set(v.pid, rng.IntN(2) == 0)
		case k < 92:
			op = "foreign file"
			for _, name := range locks { // prefer a lock the ledger does not hold
				if len(steps) == 0 {
					break
				}
				if r, ok := steps[len(steps)-1].table[name]; !ok || !r.Held {
					lock = name
				}
			}
			rec := events.Record{LockVersion: "v1", LockName: lock, RequestID: fmt.Sprint("other-tool-", i), Actor: "cron",
				HostID: "host-b", PID: 7, CreatedAt: events.FormatLockTime(now.Add(-time.Minute)),
				LastHeartbeatAt: events.FormatLockTime(now.Add(-time.Duration(rng.IntN(120)) * time.Second)),
				TTLSeconds:      60, Metadata: map[string]string{}}
			path := filepath.Join(root, "locks", lock+".lock")
			if _, serr := os.Lstat(path); errors.Is(serr, os.ErrNotExist) {
				if werr := os.WriteFile(path, rec.File(), 0o600); werr != nil {
					t.Fatal(werr)
				}
			}
		default:
			op = "release --force (anyone)"
			for _, name := range locks { // prefer a lock held by a foreign file
				if len(steps) == 0 {
					break
				}
				_, serr := os.Lstat(filepath.Join(root, "locks", name+".lock"))
				if r, ok := steps[len(steps)-1].table[name]; serr == nil && (!ok || !r.Held) {
					lock = name
				}
			}
			anyone := id
			anyone.RequestID = "" // naming a request would release only its holding
			_, err = l.Release(ctx, ledger.ReleaseRequest{Lock: lock, Identity: anyone, Force: true})
		}
		if err != nil && !expected(err) {
			t.Fatalf("step %d %s: %v", i, op, err)
		}
		steps = append(steps, step{at: now, op: op, table: snapshotTable(t, db), shared: snapshotShared(t, db)})
		// Shared holders and semaphores, from a stream of their own (so
		// that the operations above stay the ones their seeds always made),
		// on locks of their own: "pool" a semaphore of 2, "reports" readers
		// without a limit, each also taken exclusively now and then.
		if rs.IntN(2) == 0 {
			now = c.Add(time.Duration(1+rs.IntN(8000)) * time.Millisecond)
			op, err := sharedOp(ctx, l, rs, actors, &sharedReqs, fmt.Sprintf("sh-%d-%d", seed, i))
			if err != nil && !expected(err) {
				t.Fatalf("step %d %s: %v", i, op, err)
			}
			steps = append(steps, step{at: now, op: op, table: snapshotTable(t, db), shared: snapshotShared(t, db)})
		}
	}
	return steps, l
}

// sharedOp is one random operation on the shared locks.
func sharedOp(ctx context.Context, l *ledger.Ledger, rs *rand.Rand, actors []actorID, reqs *[]string, rid string) (string, error) {
	lock, limit := "pool", int64(2)
	if rs.IntN(2) == 0 {
		lock, limit = "reports", 0
	}
	a := actors[rs.IntN(len(actors))]
	id := ledger.Identity{Actor: a.name, PID: a.pid, RequestID: rid}
	someone := func() string {
		if len(*reqs) == 0 {
			return rid
		}
		return (*reqs)[rs.IntN(len(*reqs))]
	}
	ttl := time.Duration(5+rs.IntN(40)) * time.Second
	switch k := rs.IntN(100); {
	case k < 40:
		req := ledger.AcquireRequest{Lock: lock, Identity: id, TTL: ttl, Shared: true, Limit: limit, Force: rs.IntN(3) == 0,
			RecordBlocked: rs.IntN(2) == 0}
		if rs.IntN(10) == 0 {
			req.Limit = 3 // another limit: refused while anyone holds the lock
		}
		*reqs = append(*reqs, rid)
		_, err := l.TryAcquire(ctx, req)
		return "acquire shared", err
	case k < 52:
		*reqs = append(*reqs, rid)
		_, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: lock, Identity: id, TTL: ttl, Force: rs.IntN(2) == 0,
			RecordBlocked: rs.IntN(2) == 0})
		return "acquire exclusive", err
	case k < 70:
		id.RequestID = someone()
		_, err := l.Heartbeat(ctx, lock, id)
		return "heartbeat", err
	case k < 88:
		id.RequestID = someone()
		_, err := l.Release(ctx, ledger.ReleaseRequest{Lock: lock, Identity: id})
		return "release", err
	default:
		*reqs = append(*reqs, rid)
		sr := ledger.StealRequest{AcquireRequest: ledger.AcquireRequest{Lock: lock, Identity: id, TTL: ttl},
			Note: "test", Active: rs.IntN(2) == 0}
		if rs.IntN(3) > 0 {
			sr.Shared, sr.Limit = true, limit
		}
		_, err := l.Steal(ctx, sr)
		return "steal", err
	}
}

// expected are the refusals random operations run into.
func expected(err error) bool {
	return errors.Is(err, ledger.ErrHeld) || errors.Is(err, ledger.ErrStale) || errors.Is(err, ledger.ErrNotHolder) ||
		errors.Is(err, ledger.ErrLost) || errors.Is(err, ledger.ErrInvalid)
}

// requireCoverage fails a history that misses an event type or one of the
// cases the fold has a rule for.
func requireCoverage(t *testing.T, l *ledger.Ledger) {
	t.Helper()
	db := pgtest.Open(t, l.Source())
	var q = []struct{ what, sql string }{
		{"lock_acquired", `type = 'lock_acquired'`},
		{"lock_heartbeat", `type = 'lock_heartbeat'`},
		{"lock_released by the holder", `type = 'lock_released' AND body LIKE '%"forced":false%'`},
		{"forced release of a ledger holder", `type = 'lock_released' AND body LIKE '%"forced":true%' AND body LIKE '%"fencing_token"%'`},
		{"forced release of a foreign lock", `type = 'lock_released' AND body LIKE '%"forced":true%' AND body NOT LIKE '%"fencing_token"%'`},
		{"lock_stolen", `type = 'lock_stolen'`},
		{"steal of a foreign lock", `type = 'lock_stolen' AND body LIKE '%"reason":"foreign_lock"%'`},
		{"heartbeat_failed", `type = 'heartbeat_failed'`},
		{"an acquisition with targets", `type IN ('lock_acquired', 'lock_stolen') AND body LIKE '%"targets":[{%'`},
		{"acquire_blocked", `type = 'acquire_blocked'`},
		{"a shared acquisition", `type = 'lock_acquired' AND body LIKE '%"mode":"shared"%'`},
		{"a semaphore acquisition", `type = 'lock_acquired' AND body LIKE '%"limit":%'`},
		{"a shared slot taken over", `type = 'lock_stolen' AND body LIKE '%"mode":"shared"%'`},
		{"action_refused", `type = 'action_refused'`},
	}
	for _, c := range q {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM (SELECT type, CAST(body AS TEXT) AS body FROM events) WHERE ` + c.sql).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Errorf("the random history has no %s", c.what)
		}
	}
}
