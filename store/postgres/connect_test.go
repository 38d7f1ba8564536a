package postgres

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/store"
)

// A refused connection is one line: pgx writes each address it tried on a
// line of its own, which the command line would print as "\n\t" escapes.
// The error is still pgx's, and transient.
func TestRefusedConnectionIsOneLine(t *testing.T) {
	_, err := Connect(context.Background(), Config{URL: "postgres://127.0.0.1:1/x", PoolSize: 1, Wait: 5 * time.Second,
		Busy: time.Second, ReadOnly: true, Now: time.Now, Log: slog.New(slog.DiscardHandler)})
	var ce *pgconn.ConnectError
	if !errors.As(err, &ce) || !errors.Is(err, store.ErrUnreachable) || !errors.Is(err, store.ErrTransient) {
		t.Fatalf("Connect: %v, want pgx's ConnectError, out of reach (transient)", err)
	}
	if msg := err.Error(); strings.ContainsAny(msg, "\n\t") || !strings.Contains(msg, "127.0.0.1:1") || !strings.Contains(msg, "connection refused") {
		t.Fatalf("Connect: %q, want one line naming the address and the refusal", msg)
	}
}

// A server slow to answer a new connection (a loaded host) is waited for
// past the busy timeout: the open's wait starts once the connection is
// made, and making it is bounded by the connect timeout (the URL's
// connect_timeout, or DefaultConnectTimeout where it is unset or 0).
func TestASlowConnectionIsWaitedForPastTheBusyTimeout(t *testing.T) {
	name := pgtest.CreateDatabase(t)
	p := pgtest.NewProxy(t, pgtest.TCPAddr(t))
	p.Hang()
	const busy = 200 * time.Millisecond
	urls := []string{p.URL(name), p.URL(name) + "&connect_timeout=60", p.URL(name) + "&connect_timeout=0"}
	errs := make([]error, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Go(func() {
			s, err := Connect(context.Background(), Config{URL: u, PoolSize: 1, Busy: busy, Wait: busy, Create: true,
				Now: time.Now, Log: slog.New(slog.DiscardHandler)})
			if err == nil {
				s.Close()
			}
			errs[i] = err
		})
	}
	// Nothing reaches the server until the busy timeout is long past.
	time.Sleep(5 * busy)
	p.Restore()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Connect through %s: %v", urls[i], err)
		}
	}
}

// connect_timeout in the URL, or PGCONNECT_TIMEOUT, bounds making the
// connection, and the error names the database's host and the timeout.
func TestConnectTimeoutIsObeyedAndNamed(t *testing.T) {
	name := pgtest.CreateDatabase(t)
	p := pgtest.NewProxy(t, pgtest.TCPAddr(t))
	p.Hang()
	connect := func(u string) {
		t.Helper()
		_, err := Connect(context.Background(), Config{URL: u, PoolSize: 1, Busy: time.Minute, Wait: time.Minute, Create: true,
			Now: time.Now, Log: slog.New(slog.DiscardHandler)})
		var ce *pgconn.ConnectError
		if !errors.As(err, &ce) || !errors.Is(err, store.ErrUnreachable) || !errors.Is(err, store.ErrTransient) {
			t.Fatalf("Connect through %s: %v, want pgx's ConnectError, out of reach (transient)", u, err)
		}
		if msg := err.Error(); !strings.Contains(msg, p.Addr()) || !strings.Contains(msg, "connect timeout (1s;") {
			t.Errorf("Connect through %s: %q, want the address and the connect timeout named", u, msg)
		}
	}
	connect(p.URL(name) + "&connect_timeout=1")
	t.Setenv("PGCONNECT_TIMEOUT", "1")
	connect(p.URL(name))
}

// A writer that connected to an empty database, and then finds the
// tables made by another first open (a host's jobs starting together),
// joins them: it is not asked BeforeCreate, whose refusal (a root that
// has pinned a ledger, which the other open has just done) is for a
// database still empty. Asked before the migration lock, it refused. A
// database still empty under the lock is refused as before, with nothing
// made.
func TestBeforeCreateIsAskedOnlyOfTheOpenThatMakesTheTables(t *testing.T) {
	ctx := context.Background()
	connect := func(url string, before func() error) *Store {
		s, err := Connect(ctx, Config{URL: url, PoolSize: 2, Create: true, Wait: time.Minute, Busy: 10 * time.Second, Now: time.Now,
			Log: slog.New(slog.DiscardHandler), BeforeCreate: before})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	pinned := errors.New("the root has pinned a ledger")
	url := pgtest.NewDatabase(t)
	made := false
	late := connect(url, func() error {
		if made {
			return pinned
		}
		return nil
	})
	if !late.Empty() {
		t.Fatal("the database was not empty at the late writer's Connect")
	}
	if err := connect(url, nil).Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	made = true
	if err := late.Migrate(ctx); err != nil {
		t.Fatalf("the late writer, after another open made the tables: %v", err)
	}

	empty := pgtest.NewDatabase(t)
	if err := connect(empty, func() error { return pinned }).Migrate(ctx); !errors.Is(err, pinned) {
		t.Fatalf("an open refused by BeforeCreate on an empty database: %v, want its refusal", err)
	}
	var tables int
	if err := pgtest.Open(t, empty).QueryRow(`SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 0 {
		t.Fatalf("%d tables made in the database BeforeCreate refused", tables)
	}
}
