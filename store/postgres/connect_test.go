package postgres

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
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

// Two first opens of one empty database (a host's jobs starting together):
// both connect while it is empty, one makes the ledger and then pins it,
// and the other's Migrate must find the ledger made, not ask BeforeCreate
// as if the database were still as Connect found it. BeforeCreate stands
// for the root's pin check, which refuses a new ledger once the root has
// pinned one: the first open's.
func TestBeforeCreateIsAskedOnlyOfADatabaseStillEmpty(t *testing.T) {
	url := pgtest.NewDatabase(t)
	var pinned atomic.Bool
	refused := errors.New("the root has pinned another ledger")
	open := func() *Store {
		s, err := Connect(context.Background(), Config{URL: url, PoolSize: 1, Busy: 10 * time.Second, Wait: time.Minute,
			Create: true, Now: time.Now, Log: slog.New(slog.DiscardHandler), BeforeCreate: func() error {
				if pinned.Load() {
					return refused
				}
				return nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	first, second := open(), open()
	if !first.Empty() || !second.Empty() {
		t.Fatal("Connect found a ledger in a new database")
	}
	if err := first.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	pinned.Store(true)
	if err := second.Migrate(context.Background()); err != nil {
		t.Fatalf("the second first open, after the first made the ledger and pinned it: %v", err)
	}
	if second.EmptyNow(context.Background()) {
		t.Fatal("the database holds no ledger after both opens")
	}
	// A database still empty is refused, with nothing made.
	url = pgtest.NewDatabase(t)
	if err := open().Migrate(context.Background()); !errors.Is(err, refused) {
		t.Fatalf("Migrate of an empty database whose BeforeCreate refuses: %v, want the refusal", err)
	}
	if s := open(); !s.EmptyNow(context.Background()) {
		t.Fatal("a refused first open made the ledger")
	}
}
