package ledger

import (
	"context"
	"database/sql"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/trust"
)

// A write that fails after it signed its head and before it committed
// (here its NOTIFY, as when its context runs out there under load) keeps
// no head: the head kept is one of a log that was committed, or every
// later writer would refuse to sign a log that does not extend it.
func TestPostgresAWriteThatFailsBeforeItsCommitKeepsNoHead(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, v := testKey(t)
	root := t.TempDir()
	heads := trust.Heads{Dir: t.TempDir()}
	openL := func() *Ledger {
		t.Helper()
		l, err := Open(ctx, root, WithDatabase(url), WithHost(Host{ID: "host-a"}), WithSigner(s), WithHeads(heads.Dir))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := openL()
	if _, err := l.TryAcquire(ctx, AcquireRequest{Lock: "a", Identity: Identity{RequestID: "r1"}}); err != nil {
		t.Fatal(err)
	}
	id := l.ID()
	heads.Root = l.Root()
	l.Close()
	kept, err := heads.Last(id, v)
	if err != nil || kept == nil || kept.Size != 1 {
		t.Fatalf("head kept: %+v, %v; want size 1", kept, err)
	}
	// A pg_notify of the ledger's connections' search path that fails:
	// the write's NOTIFY, sent in its write call, fails.
	admin, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for _, q := range []string{
		`CREATE FUNCTION public.pg_notify(text, text) RETURNS void LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'notify refused'; END $$`,
		`DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET search_path = public, pg_catalog', current_database()); END $$`,
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	l = openL()
	if _, err := l.TryAcquire(ctx, AcquireRequest{Lock: "b", Identity: Identity{RequestID: "r2"}}); err == nil {
		t.Fatal("a write whose NOTIFY failed: succeeded, want an error")
	}
	l.Close()
	if kept, err := heads.Last(id, v); err != nil || kept == nil || kept.Size != 1 {
		size := int64(0)
		if kept != nil {
			size = kept.Size
		}
		t.Fatalf("head kept after the failed write: size %d, %v; want still size 1", size, err)
	}
	if _, err := admin.ExecContext(ctx, `DROP FUNCTION public.pg_notify(text, text)`); err != nil {
		t.Fatal(err)
	}
	l = openL()
	defer l.Close()
	if _, err := l.TryAcquire(ctx, AcquireRequest{Lock: "b", Identity: Identity{RequestID: "r3"}}); err != nil {
		t.Fatalf("the next write: %v", err)
	}
}

// A heartbeat whose connection is cut while it commits (the server ends
// the backend inside COMMIT, so the outcome reaches the client only as a
// lost connection) keeps no head: once another host appends at that seq,
// this trust store's next write still signs, and its head is the log's.
func TestPostgresAHeartbeatCutInItsCommitKeepsNoHead(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, v := testKey(t)
	root := t.TempDir()
	heads := trust.Heads{Dir: t.TempDir()}
	l, err := Open(ctx, root, WithDatabase(url), WithHost(Host{ID: "host-a"}), WithSigner(s), WithHeads(heads.Dir))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	heads.Root = l.Root()
	id := Identity{RequestID: "r1", Actor: "t", PID: 1}
	if _, err := l.TryAcquire(ctx, AcquireRequest{Lock: "a", Identity: id, TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	// A deferred trigger runs inside COMMIT: the backend that commits seq 2
	// ends itself there, as pg_terminate_backend from elsewhere would.
	for _, q := range []string{
		`CREATE FUNCTION public.cut_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_terminate_backend(pg_backend_pid()); PERFORM pg_sleep(5); RETURN NULL; END $$`,
		`CREATE CONSTRAINT TRIGGER cut_commit AFTER INSERT ON events DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.seq = 2) EXECUTE FUNCTION public.cut_commit()`,
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := l.Renew(ctx, RenewRequest{Lock: "a", Identity: id}); err == nil {
		t.Fatal("a heartbeat whose connection was cut in its commit: succeeded, want an error")
	}
	if kept, err := heads.Last(l.ID(), v); err != nil || kept == nil || kept.Size != 1 {
		t.Fatalf("head kept after the cut heartbeat: %+v, %v; want still size 1", kept, err)
	}
	if _, err := admin.ExecContext(ctx, `DROP TRIGGER cut_commit ON events`); err != nil {
		t.Fatal(err)
	}
	// Another host appends at seq 2, unsigned.
	other, err := Open(ctx, t.TempDir(), WithDatabase(url), WithHost(Host{ID: "host-b"}), Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.TryAcquire(ctx, AcquireRequest{Lock: "b", Identity: Identity{RequestID: "r2", Actor: "t", PID: 1}, TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	other.Close()
	if _, err := l.Renew(ctx, RenewRequest{Lock: "a", Identity: id}); err != nil {
		t.Fatalf("the next heartbeat after another host appended: %v", err)
	}
	if kept, err := heads.Last(l.ID(), v); err != nil || kept == nil || kept.Size != 3 {
		t.Fatalf("head kept after the next heartbeat: %+v, %v; want size 3", kept, err)
	}
}
