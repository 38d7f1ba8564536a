package ledger_test

// The conformance suite: every store runs through the same tests, with
// the same expectations, through the public API only.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/lease"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/store"
	"github.com/lockledger/lockledger/verify"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// storeFixture opens ledgers that share one store, each as its own host
// (its own root for this host's lock files, where the store allows one).
type storeFixture struct {
	t    *testing.T
	kind string
	url  string // PostgreSQL; "" for SQLite
	root string // SQLite: the one root every opener shares
}

func (f *storeFixture) open(host string, opts ...ledger.Option) *ledger.Ledger {
	f.t.Helper()
	return f.openAs(ledger.Host{ID: host, BootID: "boot-" + host}, opts...)
}

// openAs is open as host h.
func (f *storeFixture) openAs(h ledger.Host, opts ...ledger.Option) *ledger.Ledger {
	f.t.Helper()
	opts = append(opts, ledger.WithHost(h))
	if f.url != "" {
		return fixture.OpenPostgres(f.t, f.url, opts...)
	}
	return fixture.Open(f.t, f.root, opts...)
}

// forEachStore runs body once per store, each time on a new, empty ledger:
// PostgreSQL both directly and through PgBouncer in transaction pooling
// mode, where a session's state does not outlive a transaction. Through
// PgBouncer the suite takes as long as directly; make test runs the tests
// of throughBouncer there, make pgbouncer (LOCKLEDGER_PGBOUNCER=only) all
// of them, and only there.
func forEachStore(t *testing.T, body func(t *testing.T, f *storeFixture)) {
	only := os.Getenv("LOCKLEDGER_PGBOUNCER") == "only"
	test := t.Name()
	t.Run("sqlite", func(t *testing.T) {
		if only {
			t.Skip("LOCKLEDGER_PGBOUNCER=only")
		}
		body(t, &storeFixture{t: t, kind: "sqlite", root: t.TempDir()})
	})
	t.Run("postgres", func(t *testing.T) {
		if only {
			t.Skip("LOCKLEDGER_PGBOUNCER=only")
		}
		body(t, &storeFixture{t: t, kind: "postgres", url: pgtest.NewDatabase(t)})
	})
	t.Run("pgbouncer", func(t *testing.T) {
		if !only && !throughBouncer[test] {
			t.Skip("through PgBouncer under make pgbouncer only")
		}
		body(t, &storeFixture{t: t, kind: "postgres", url: pgtest.NewBouncedDatabase(t)})
	})
}

// throughBouncer is the part of the suite make test runs through
// PgBouncer: one of each way the store uses a connection (the write path,
// writers racing for the writer lock, a waiter woken, an old schema
// migrated, the README's roles).
var throughBouncer = map[string]bool{
	"TestConformanceAcquireHeartbeatRelease":                true,
	"TestConformanceRacingAcquiresHaveOneWinner":            true,
	"TestConformanceWaiterGetsTheLockOnRelease":             true,
	"TestConformanceOldLedgerOpensWithOneHoldersTable":      true,
	"TestHostIDCollisionKeepsTheLiveHolderOfAnotherMachine": true,
}

func as(rid string) ledger.Identity { return ledger.Identity{RequestID: rid, Actor: "conformance"} }

// cycles acquires and releases lock c n times, as requests r0, r1, ...
func cycles(t *testing.T, l *ledger.Ledger, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		rid := fmt.Sprintf("r%d", i)
		if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "c", Identity: as(rid)}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Release(ctx, ledger.ReleaseRequest{Lock: "c", Identity: as(rid)}); err != nil {
			t.Fatal(err)
		}
	}
}

// verifyOK checks the whole log and the locks table as verify does.
func verifyOK(t *testing.T, l *ledger.Ledger) *verify.Report {
	t.Helper()
	rep, err := l.Verify(context.Background())
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if !rep.OK {
		t.Fatalf("verify: got %d problems, want none: %+v", rep.ProblemCount, rep.Problems)
	}
	return rep
}

func TestConformanceAcquireHeartbeatRelease(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, f *storeFixture) {
		ctx := context.Background()
		a, b := f.open("host-a"), f.open("host-b")
		got, err := a.TryAcquire(ctx, ledger.AcquireRequest{Lock: "deploy", Identity: as("r1"), TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		var held *ledger.HeldError
		if _, err := b.TryAcquire(ctx, ledger.AcquireRequest{Lock: "deploy", Identity: as("r2"), TTL: time.Minute}); !errors.As(err, &held) {
			t.Fatalf("second acquire: got %v, want a HeldError", err)
		}
		if held.Holder.RequestID != "r1" {
			t.Errorf("held by: got %s, want r1", held.Holder.RequestID)
		}
		if _, err := a.Heartbeat(ctx, "deploy", as("r1")); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Heartbeat(ctx, "deploy", as("r2")); !errors.Is(err, ledger.ErrNotHolder) {
			t.Errorf("heartbeat by a non-holder: got %v, want ErrNotHolder", err)
		}
		if _, err := a.Release(ctx, ledger.ReleaseRequest{Lock: "deploy", Identity: as("r1")}); err != nil {
			t.Fatal(err)
		}
		again, err := b.TryAcquire(ctx, ledger.AcquireRequest{Lock: "deploy", Identity: as("r2"), TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if again.FencingToken <= got.FencingToken {
			t.Errorf("fencing token: got %d after %d, want it to increase", again.FencingToken, got.FencingToken)
		}
		st, err := a.Status(ctx, "deploy")
		if err != nil {
			t.Fatal(err)
		}
		if st.State != events.StateHeld || st.Holder.RequestID != "r2" || st.Holder.HostID != "host-b" {
			t.Errorf("status seen from host-a: got %s by %+v, want held by r2 on host-b", st.State, st.Holder)
		}
		rep := verifyOK(t, a)
		// acquired, heartbeat, refused heartbeat, released, acquired (the
		// refused acquire is recorded only with RecordBlocked)
		if rep.Events != 5 {
			t.Errorf("events: got %d, want 5", rep.Events)
		}
	})
}

func TestConformanceRacingAcquiresHaveOneWinner(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, f *storeFixture) {
		ctx := context.Background()
		const hosts, trials = 6, 8
		ls := make([]*ledger.Ledger, hosts)
		for i := range ls {
			ls[i] = f.open(fmt.Sprintf("host-%d", i))
		}
		var last int64
		for trial := range trials {
			lock := fmt.Sprintf("race-%d", trial%2)
			var mu sync.Mutex
			var winners []string
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i, l := range ls {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					rid := fmt.Sprintf("t%d-h%d", trial, i)
					a, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: lock, Identity: as(rid), TTL: time.Minute})
					var held *ledger.HeldError
					switch {
					case err == nil:
						mu.Lock()
						winners = append(winners, rid)
						if a.FencingToken <= last {
							t.Errorf("trial %d: fencing token %d after %d", trial, a.FencingToken, last)
						}
						last = a.FencingToken
						mu.Unlock()
					case errors.As(err, &held):
					default:
						t.Errorf("trial %d: %s: %v", trial, rid, err)
					}
				}()
			}
			close(start)
			wg.Wait()
			if len(winners) != 1 {
				t.Fatalf("trial %d: got winners %v, want exactly one", trial, winners)
			}
			var w int
			fmt.Sscanf(winners[0], fmt.Sprintf("t%d-h%%d", trial), &w)
			if _, err := ls[w].Release(ctx, ledger.ReleaseRequest{Lock: lock, Identity: as(winners[0])}); err != nil {
				t.Fatal(err)
			}
		}
		verifyOK(t, ls[0])
	})
}

func TestConformanceEventsAreAppendOnly(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, f *storeFixture) {
		ctx := context.Background()
		l := f.open("host-a")
		if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "x", Identity: as("r1")}); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{
			`UPDATE events SET actor = 'mallory'`,
			`DELETE FROM events`,
			`UPDATE tlog_hashes SET hashes = hashes`,
			`DELETE FROM tlog_hashes`,
			`INSERT INTO events (seq, event_id, type, lock_name, request_id, actor, at, body, prev_hash, hash)
				SELECT seq, event_id || 'x', type, lock_name, request_id, actor, at, body, prev_hash, hash FROM events`,
		} {
			if _, err := pgtest.Open(t, l.Source()).ExecContext(ctx, q); err == nil {
				t.Errorf("%s: the database took it, want it refused", q)
			}
		}
		verifyOK(t, l)
	})
}

func TestConformanceWaiterGetsTheLockOnRelease(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, f *storeFixture) {
		ctx := context.Background()
		a, b := f.open("host-a"), f.open("host-b")
		if _, err := a.TryAcquire(ctx, ledger.AcquireRequest{Lock: "q", Identity: as("first"), TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
		blocked := make(chan struct{})
		var once sync.Once
		done := make(chan error, 1)
		go func() {
			_, err := lease.Wait(ctx, b, ledger.AcquireRequest{Lock: "q", Identity: as("second"), TTL: time.Minute}, time.Minute,
				func(*ledger.HeldError, time.Duration) { once.Do(func() { close(blocked) }) })
			done <- err
		}()
		<-blocked
		if _, err := a.Release(ctx, ledger.ReleaseRequest{Lock: "q", Identity: as("first")}); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("waiter: %v", err)
		}
		st, err := a.Status(ctx, "q")
		if err != nil {
			t.Fatal(err)
		}
		if st.Holder == nil || st.Holder.RequestID != "second" {
			t.Errorf("holder after the release: got %+v, want second", st.Holder)
		}
		verifyOK(t, a)
	})
}

func TestConformanceStaleLockIsTakenOverWithAHigherToken(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, f *storeFixture) {
		ctx := context.Background()
		a, b := f.open("host-a"), f.open("host-b")
		first, err := a.TryAcquire(ctx, ledger.AcquireRequest{Lock: "s", Identity: as("old"), TTL: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		// host-b cannot probe host-a's pid: it waits for the TTL to pass.
		for {
			st, err := b.Status(ctx, "s")
			if err != nil {
				t.Fatal(err)
			}
			if st.State == events.StateStale {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		var stale *ledger.StaleError
		if _, err := b.TryAcquire(ctx, ledger.AcquireRequest{Lock: "s", Identity: as("new"), TTL: time.Minute}); !errors.As(err, &stale) {
			t.Fatalf("acquire of a stale lock without force: got %v, want a StaleError", err)
		}
		got, err := b.TryAcquire(ctx, ledger.AcquireRequest{Lock: "s", Identity: as("new"), TTL: time.Minute, Force: true})
		if err != nil {
			t.Fatal(err)
		}
		if !got.Stolen || got.FencingToken <= first.FencingToken {
			t.Errorf("take-over: got stolen=%v token %d, want stolen with a token above %d", got.Stolen, got.FencingToken, first.FencingToken)
		}
		if _, err := a.Heartbeat(ctx, "s", as("old")); !errors.Is(err, ledger.ErrLost) && !errors.Is(err, ledger.ErrNotHolder) {
			t.Errorf("heartbeat of the old holder: got %v, want the lock lost", err)
		}
		verifyOK(t, b)
	})
}

func TestConformanceCheckpointsAndProject(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, f *storeFixture) {
		ctx := context.Background()
		skey, vkey, err := note.GenerateKey(nil, "conformance")
		if err != nil {
			t.Fatal(err)
		}
		signer, err := note.NewSigner(skey)
		if err != nil {
			t.Fatal(err)
		}
		verifier, err := note.NewVerifier(vkey)
		if err != nil {
			t.Fatal(err)
		}
		l := f.open("host-a", ledger.WithSigner(signer))
		cycles(t, l, 3)
		cp, err := l.Checkpoint(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{`UPDATE checkpoints SET note = ''`, `DELETE FROM checkpoints`} {
			if _, err := pgtest.Open(t, l.Source()).ExecContext(ctx, q); err == nil {
				t.Errorf("%s: the database took it, want it refused", q)
			}
		}
		if _, err := l.Project(ctx); err != nil {
			t.Fatal(err)
		}
		rep, err := l.Verify(ctx, ledger.CheckAgainst(&replay.Trust{Verifiers: []note.Verifier{verifier}, Expected: true}))
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK {
			t.Fatalf("verify against the checkpoints: %+v", rep.Problems)
		}
		if cp.Size < 6 {
			t.Errorf("checkpoint size: got %d, want at least the 6 lock events", cp.Size)
		}
		verifyOK(t, l)
	})
}

// TestConformanceHashTailWithoutABound: computing the stored Merkle hashes
// of every event past the last hashed one (what project
// --accept-broken-chain does) runs on both engines: an unbounded LIMIT is
// spelled in a way PostgreSQL takes too.
func TestConformanceHashTailWithoutABound(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, f *storeFixture) {
		ctx := context.Background()
		l := f.open("host-a")
		if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "h", Identity: as("one"), TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
		tx, err := pgtest.Open(t, l.Source()).BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		last, hashed, err := store.TreeLag(ctx, tx)
		if err != nil || last != 1 || hashed != 1 {
			t.Fatalf("tree lag %d %d %v, want 1 1", last, hashed, err)
		}
		if n, gap, err := store.HashTail(ctx, tx, slog.New(slog.DiscardHandler), hashed, 0); err != nil || n != 0 || gap {
			t.Fatalf("HashTail with no bound: %d %v %v, want nothing to hash", n, gap, err)
		}
	})
}
