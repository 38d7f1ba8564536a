package postgres

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/migrations"
	"github.com/lockledger/lockledger/store"
)

// heldWriterRow opens a ledger's schema in a new database (through
// PgBouncer when bounced) and a store on it with busy timeout busy, and
// holds the writer row in a transaction of another connection until the
// test ends.
func heldWriterRow(t *testing.T, busy time.Duration, bounced bool) (*Store, *sql.DB) {
	t.Helper()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	if bounced {
		url = pgtest.NewBouncedDatabase(t)
	}
	db := pgtest.Open(t, url)
	if err := migrations.Postgres.Migrate(ctx, db, nil, func() string { return "" }); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('ledger_id', 'test') ON CONFLICT (key) DO UPDATE SET value = 'test'`); err != nil {
		t.Fatal(err)
	}
	s, err := Connect(ctx, Config{URL: url, PoolSize: 2, Wait: time.Minute, Busy: busy, Now: time.Now,
		Log: slog.New(slog.DiscardHandler), LedgerID: func() string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	holder, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Rollback() })
	if _, err := holder.ExecContext(ctx, `SELECT * FROM writer_lock WHERE id = 1 FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	return s, db
}

// A begin behind a writer row that another transaction holds fails after
// the busy timeout, with the transient error that names the writer lock:
// the lock_timeout set in the writer row's own statement is in force
// before that statement waits for the row. Through PgBouncer's
// transaction pooling too, where nothing may outlive the transaction.
func TestBeginBehindAHeldWriterRowTimesOut(t *testing.T) {
	for _, bounced := range []bool{false, true} {
		t.Run(map[bool]string{false: "direct", true: "bounced"}[bounced], func(t *testing.T) {
			const busy = 300 * time.Millisecond
			s, _ := heldWriterRow(t, busy, bounced)
			// Far longer than the busy timeout: a begin whose wait had no
			// bound would end only here.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			tx, err := s.Begin(ctx)
			took := time.Since(start)
			if err == nil {
				tx.Rollback()
				t.Fatal("Begin took the writer row another transaction holds")
			}
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "55P03" || !errors.Is(s.Classify(err), store.ErrTransient) {
				t.Fatalf("Begin after %s: %v, want the lock_timeout's transient 55P03", took, err)
			}
			if took < busy || took > 20*time.Second {
				t.Fatalf("Begin failed after %s, want about the busy timeout %s", took, busy)
			}
			// The bound was the transaction's: the connection, back in
			// the pool, waits without one.
			var timeout string
			if err := s.db.QueryRowContext(ctx, `SELECT current_setting('lock_timeout')`).Scan(&timeout); err != nil || timeout != "0" {
				t.Fatalf("lock_timeout after the begin: %q, %v; want 0", timeout, err)
			}
		})
	}
}

// A begin whose connection is cut while its one statement (the writer
// row's, with the bounds) waits for the row fails at once with the
// server's error, and the pool goes on with a connection of its own.
func TestBeginCutWhileItWaitsForTheWriterRow(t *testing.T) {
	s, db := heldWriterRow(t, time.Minute, false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cut := make(chan error, 1)
	go func() {
		for {
			var pid int
			err := db.QueryRowContext(ctx, `SELECT pid FROM pg_stat_activity
				WHERE wait_event_type = 'Lock' AND query LIKE '%FROM writer_lock%set_config%'`).Scan(&pid)
			if errors.Is(err, sql.ErrNoRows) {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			if err == nil {
				_, err = db.ExecContext(ctx, `SELECT pg_terminate_backend($1)`, pid)
			}
			cut <- err
			return
		}
	}()
	tx, err := s.Begin(ctx)
	if cerr := <-cut; cerr != nil {
		t.Fatal(cerr)
	}
	if err == nil {
		tx.Rollback()
		t.Fatal("Begin went on after its connection was cut")
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57P01" || ctx.Err() != nil {
		t.Fatalf("Begin cut: %v, want the server's 57P01 before the test's deadline", err)
	}
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT 1`).Scan(&n); err != nil {
		t.Fatalf("the pool after the cut: %v", err)
	}
}

// A writer that sits idle in its transaction past half the busy timeout
// (stopped, or starved of CPU) finds its session ended by the server and
// its transaction rolled back: whichever way the client learns it (the
// server's 25P03 read as the reply to its next statement, or the closed
// connection found when sending it), the error is transient, and a wait
// tries again rather than failing on it.
func TestAWriterIdleInItsTransactionIsCutOffTransiently(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	db := pgtest.Open(t, url)
	if err := migrations.Postgres.Migrate(ctx, db, nil, func() string { return "" }); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('ledger_id', 'test') ON CONFLICT (key) DO UPDATE SET value = 'test'`); err != nil {
		t.Fatal(err)
	}
	s, err := Connect(ctx, Config{URL: url, PoolSize: 2, Wait: time.Minute, Busy: 400 * time.Millisecond, Now: time.Now,
		Log: slog.New(slog.DiscardHandler), LedgerID: func() string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tx, err := s.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	// Await the end of the session that sat idle, not a fixed time.
	for deadline := time.Now().Add(time.Minute); ; {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND state LIKE 'idle in transaction%'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer's session still sits idle in its transaction after a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := tx.ExecContext(ctx, `SELECT 1`); err == nil || !errors.Is(s.Classify(err), store.ErrTransient) {
		t.Errorf("a statement of a writer cut off for idling: %v, want a transient error", err)
	}
	// The server's own answer, as a writer starved between its statements
	// reads it when the statement was on its way as the session ended.
	if cut := (&pgconn.PgError{Severity: "FATAL", Code: "25P03",
		Message: "terminating connection due to idle-in-transaction timeout"}); !errors.Is(s.Classify(cut), store.ErrTransient) {
		t.Errorf("Classify(%v) is not store.ErrTransient", cut)
	}
}
