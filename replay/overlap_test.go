package replay_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/migrations"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/schema"
	"github.com/lockledger/lockledger/verify"
)

// ovlLog builds a real ledger.db (the migrations' schema) of hand-made,
// schema-valid, hash-chained events.
type ovlLog struct {
	t    *testing.T
	db   *sql.DB
	seq  int64
	prev string
	at   time.Time
	// forge, when set, edits the next event's envelope before it is
	// sealed: a forger's event, chained as validly as any other.
	forge func(*events.Envelope)
}

// migratedLedger is the bytes of a ledger.db the migrations made and
// nothing else wrote, made once: each ovlLog starts from a copy.
var migratedLedger = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "replay-ovl-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "ledger.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return nil, err
	}
	err = migrations.Apply(context.Background(), db, func() string { return events.FormatTime(time.Now()) })
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return os.ReadFile(path)
})

func newOvlLog(t *testing.T) *ovlLog {
	t.Helper()
	migrated, err := migratedLedger()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ledger.db")
	if err := os.WriteFile(path, migrated, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &ovlLog{t: t, db: db, prev: events.Genesis("overlap-test"), at: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

// add appends one event of typ on lock by request req and returns its seq.
func (g *ovlLog) add(typ events.Type, lock, req string, payload any) int64 {
	g.t.Helper()
	g.seq++
	g.at = g.at.Add(time.Second)
	ev := &events.Event{
		Envelope: events.Envelope{EventID: events.NewULID(g.at), Seq: g.seq, Type: typ, SchemaVersion: events.SchemaVersion,
			At: events.FormatTime(g.at), LockName: lock, RequestID: req, Actor: "tester", HostID: "host-a", PID: 42},
		Payload: payload, PrevHash: g.prev,
	}
	if g.forge != nil {
		g.forge(&ev.Envelope)
		g.forge = nil
	}
	fixture.Append(g.t, g.db, ev)
	if err := schema.ValidateEvent(typ, ev.Body); err != nil {
		g.t.Fatalf("hand-built %s is not schema-valid: %v\n%s", typ, err, ev.Body)
	}
	g.prev = ev.Hash
	return ev.Seq
}

func (g *ovlLog) insert(seq int64, id, typ, lock, req, at string, body []byte, prev, hash string) {
	g.t.Helper()
	if _, err := g.db.Exec(`INSERT INTO events (seq, event_id, type, lock_name, request_id, actor, at, body, prev_hash, hash)
		VALUES (?,?,?,?,?,?,?,?,?,?)`, seq, id, typ, lock, req, "tester", at, body, prev, hash); err != nil {
		g.t.Fatal(err)
	}
	fixture.AppendTreeHashes(g.t, g.db, seq, body)
}

func (g *ovlLog) acquire(lock, req string) int64 {
	return g.add(events.LockAcquired, lock, req, &events.Acquired{TTLSeconds: 60, FencingToken: g.seq + 1,
		Metadata: map[string]string{}})
}

func (g *ovlLog) steal(lock, req, prevReq, reason string) int64 {
	prev := events.Record{LockVersion: "v1", LockName: lock, RequestID: prevReq, Actor: "tester", HostID: "host-a", PID: 42,
		CreatedAt: "2026-01-02T03:04:05Z", LastHeartbeatAt: "2026-01-02T03:04:05Z", TTLSeconds: 60, Metadata: map[string]string{}}
	return g.add(events.LockStolen, lock, req, &events.Stolen{
		Acquired:     events.Acquired{TTLSeconds: 60, FencingToken: g.seq + 1, Metadata: map[string]string{}},
		PreviousLock: prev, PreviousLockHash: events.LockFileHash(prev.File()), Reason: reason})
}

// acquireShared is a shared acquisition (limit 0: none).
func (g *ovlLog) acquireShared(lock, req string, limit int64) int64 {
	return g.add(events.LockAcquired, lock, req, &events.Acquired{TTLSeconds: 60, FencingToken: g.seq + 1,
		Metadata: map[string]string{}, Mode: events.ModeShared, Limit: limit})
}

func (g *ovlLog) stealShared(lock, req, prevReq string, limit int64) int64 {
	prev := events.Record{LockVersion: "v1", LockName: lock, RequestID: prevReq, Actor: "tester", HostID: "host-a", PID: 42,
		CreatedAt: "2026-01-02T03:04:05Z", LastHeartbeatAt: "2026-01-02T03:04:05Z", TTLSeconds: 60, Metadata: map[string]string{}}
	return g.add(events.LockStolen, lock, req, &events.Stolen{
		Acquired: events.Acquired{TTLSeconds: 60, FencingToken: g.seq + 1, Metadata: map[string]string{},
			Mode: events.ModeShared, Limit: limit},
		PreviousLock: prev, PreviousLockHash: events.LockFileHash(prev.File()), Reason: events.ReasonHolderDead})
}

func (g *ovlLog) release(lock, req string, token int64) int64 {
	return g.add(events.LockReleased, lock, req, &events.Released{Result: events.ResultSuccess, FencingToken: token})
}

func (g *ovlLog) forceRelease(lock, by, holder string, token int64) int64 {
	return g.add(events.LockReleased, lock, by, &events.Released{Result: events.ResultCancelled, Forced: true,
		ReleasedRequestID: holder, FencingToken: token})
}

func (g *ovlLog) heartbeat(lock, req string) int64 {
	return g.add(events.LockHeartbeat, lock, req, &events.Heartbeat{})
}

func (g *ovlLog) blocked(lock, req, holder string) int64 {
	return g.add(events.AcquireBlocked, lock, req, &events.Blocked{State: "held", HeldBy: &events.Holder{RequestID: holder,
		Actor: "tester", HostID: "host-a", PID: 42, CreatedAt: "2026-01-02T03:04:05Z", LastHeartbeatAt: "2026-01-02T03:04:05Z"}})
}

func (g *ovlLog) lost(lock, req string) int64 {
	return g.add(events.HeartbeatFailed, lock, req, &events.HeartbeatFailedPayload{ConsecutiveFailures: 1, Error: "lost", LockLost: true})
}

// ovlFound is an overlap reduced to what the cases assert: lock, acquiring
// seq and request, and the holder it overlapped.
type ovlFound struct {
	lock      string
	seq       int64
	req       string
	holderSeq int64
	holder    string
}

func TestOverlapsOnHandBuiltLogs(t *testing.T) {
	cases := []struct {
		name  string
		build func(g *ovlLog) []ovlFound
	}{
		{"empty log", func(g *ovlLog) []ovlFound { return nil }},
		{"acquire, release, acquire", func(g *ovlLog) []ovlFound {
			a := g.acquire("x", "req_a")
			g.heartbeat("x", "req_a")
			g.release("x", "req_a", a)
			b := g.acquire("x", "req_b")
			g.release("x", "req_b", b)
			g.acquire("x", "req_c")
			return nil
		}},
		{"second acquire while held", func(g *ovlLog) []ovlFound {
			a := g.acquire("x", "req_a")
			b := g.acquire("x", "req_b")
			return []ovlFound{{"x", b, "req_b", a, "req_a"}}
		}},
		{"steal is a handover", func(g *ovlLog) []ovlFound {
			g.acquire("x", "req_a")
			g.steal("x", "req_b", "req_a", events.ReasonHolderDead)
			g.steal("x", "req_c", "req_b", events.ReasonForcedActive)
			g.release("x", "req_a", 0) // the robbed holder's late release frees nobody
			g.lost("x", "req_b")
			d := g.acquire("x", "req_d")
			return []ovlFound{{"x", d, "req_d", 3, "req_c"}}
		}},
		{"steal then release then acquire", func(g *ovlLog) []ovlFound {
			g.acquire("x", "req_a")
			s := g.steal("x", "req_b", "req_a", events.ReasonStaleForced)
			g.release("x", "req_b", s)
			g.acquire("x", "req_c")
			return nil
		}},
		{"shared holders coexist", func(g *ovlLog) []ovlFound {
			a := g.acquireShared("x", "req_a", 0)
			g.acquireShared("x", "req_b", 0)
			g.heartbeat("x", "req_a")
			g.acquireShared("x", "req_c", 0)
			g.release("x", "req_a", a)
			return nil
		}},
		{"exclusive while shared held", func(g *ovlLog) []ovlFound {
			a := g.acquireShared("x", "req_a", 0)
			b := g.acquire("x", "req_b")
			return []ovlFound{{"x", b, "req_b", a, "req_a"}}
		}},
		{"shared while exclusive held", func(g *ovlLog) []ovlFound {
			a := g.acquire("x", "req_a")
			b := g.acquireShared("x", "req_b", 0)
			return []ovlFound{{"x", b, "req_b", a, "req_a"}}
		}},
		{"semaphore within its limit, then past it", func(g *ovlLog) []ovlFound {
			a := g.acquireShared("x", "req_a", 2)
			b := g.acquireShared("x", "req_b", 2)
			g.release("x", "req_a", a)
			g.acquireShared("x", "req_c", 2)
			d := g.acquireShared("x", "req_d", 2)
			return []ovlFound{{"x", d, "req_d", b, "req_b"}}
		}},
		{"a slot taken over is a handover", func(g *ovlLog) []ovlFound {
			g.acquireShared("x", "req_a", 2)
			g.acquireShared("x", "req_b", 2)
			c := g.stealShared("x", "req_c", "req_a", 2)
			g.release("x", "req_c", c)
			g.acquireShared("x", "req_d", 2)
			return nil
		}},
		{"exclusive released, then shared", func(g *ovlLog) []ovlFound {
			a := g.acquire("x", "req_a")
			g.release("x", "req_a", a)
			g.acquireShared("x", "req_b", 0)
			g.acquireShared("x", "req_c", 0)
			return nil
		}},
		{"different locks never overlap", func(g *ovlLog) []ovlFound {
			g.acquire("x", "req_a")
			g.acquire("y", "req_b")
			g.acquire("z", "req_a")
			return nil
		}},
		{"forced release frees the holder it names", func(g *ovlLog) []ovlFound {
			g.acquire("x", "req_a")
			g.forceRelease("x", "req_oncall", "req_a", 0)
			g.acquire("x", "req_b")
			return nil
		}},
		{"forced release by fencing token", func(g *ovlLog) []ovlFound {
			a := g.acquire("x", "req_a")
			g.forceRelease("x", "req_oncall", "", a)
			g.acquire("x", "req_b")
			return nil
		}},
		{"release by a non-holder frees nobody", func(g *ovlLog) []ovlFound {
			a := g.acquire("x", "req_a")
			g.release("x", "req_z", 0)
			g.forceRelease("x", "req_oncall", "req_foreign", 0)
			b := g.acquire("x", "req_b")
			return []ovlFound{{"x", b, "req_b", a, "req_a"}}
		}},
		{"heartbeats, blocked and lost events do not free", func(g *ovlLog) []ovlFound {
			a := g.acquire("x", "req_a")
			g.heartbeat("x", "req_a")
			g.blocked("x", "req_b", "req_a")
			g.lost("x", "req_a")
			b := g.acquire("x", "req_b")
			return []ovlFound{{"x", b, "req_b", a, "req_a"}}
		}},
		{"a foreign lock taken over and released", func(g *ovlLog) []ovlFound {
			s := g.steal("x", "req_a", "req_foreign", events.ReasonForeignLock)
			g.release("x", "req_a", s)
			g.acquire("x", "req_b")
			return nil
		}},
		{"three holders: every acquisition is reported", func(g *ovlLog) []ovlFound {
			a := g.acquire("x", "req_a")
			b := g.acquire("x", "req_b")
			g.release("x", "req_b", b)
			c := g.acquire("x", "req_c")
			g.release("x", "req_a", a)
			g.release("x", "req_c", c)
			g.acquire("x", "req_d")
			return []ovlFound{{"x", b, "req_b", a, "req_a"}, {"x", c, "req_c", a, "req_a"}}
		}},
		{"the same request again is one holder", func(g *ovlLog) []ovlFound {
			g.acquire("x", "req_a")
			g.acquire("x", "req_a")
			return nil
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newOvlLog(t)
			want := c.build(g)
			got, err := replay.Overlaps(context.Background(), g.db)
			if err != nil {
				t.Fatal(err)
			}
			var gotF []ovlFound
			for _, o := range got {
				gotF = append(gotF, ovlFound{o.Lock, o.Seq, o.RequestID, o.HolderSeq, o.HolderRequestID})
				if o.At == "" || o.HolderAt == "" || !strings.Contains(o.String(), o.HolderRequestID) {
					t.Errorf("overlap %+v: missing times or an unhelpful message %q", o, o.String())
				}
			}
			if !reflect.DeepEqual(gotF, want) {
				t.Fatalf("overlaps\n got %+v\nwant %+v", gotF, want)
			}
			// verify reports the same overlaps, as damage of kind overlap.
			rep, _, err := replay.VerifyLedger(context.Background(), g.db, "test", events.Genesis("overlap-test"))
			if err != nil {
				t.Fatal(err)
			}
			var verified []int64
			for _, p := range rep.Problems {
				if p.Kind == verify.KindOverlap {
					verified = append(verified, p.Seq)
				}
			}
			var wantSeqs []int64
			for _, w := range want {
				wantSeqs = append(wantSeqs, w.seq)
			}
			if !reflect.DeepEqual(verified, wantSeqs) {
				t.Fatalf("verify: overlap findings at seqs %v, want %v\n%+v", verified, wantSeqs, rep.Problems)
			}
		})
	}
}

func TestOverlapsInATransactionAndOnABadBody(t *testing.T) {
	g := newOvlLog(t)
	a := g.acquire("x", "req_a")
	g.acquire("x", "req_b")
	tx, err := g.db.BeginTx(context.Background(), &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err := replay.Overlaps(context.Background(), tx)
	_ = tx.Rollback()
	if err != nil || len(got) != 1 || got[0].HolderSeq != a {
		t.Fatalf("Overlaps(tx): %v %+v", err, got)
	}
	// A body that does not decode is an error naming its seq, not a silent skip.
	g.insert(3, "01J0000000000000000000000Z", "lock_released", "x", "req_a", "2026-01-02T03:04:09.000000000Z",
		[]byte(`{"type":"lock_released","seq":"three"`), g.prev, "00")
	if _, err := replay.Overlaps(context.Background(), g.db); err == nil || !strings.Contains(err.Error(), "seq 3") {
		t.Fatalf("bad body: err %v, want one naming seq 3", err)
	}
}
