package ledger

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/migrations"
)

// An open that finds the tables made but no ledger id, while another first
// open gives the ledger its id and its first events, joins that ledger:
// an id is committed before any event, so events read after the id was
// missing mean it is there now. Before, such an open was refused as a
// ledger whose id is gone ("holds 1 events but no ledger id", naming
// ledger.db on PostgreSQL too). The test holds the events table locked so
// that the open's read of it waits between its read of the id and the
// other open's commits.
func TestPostgresFirstOpenJoinsTheLedgerMadeBetweenItsReads(t *testing.T) {
	name := pgtest.CreateDatabase(t)
	url := pgtest.TCPURL(t, name)
	db := pgtest.Open(t, url)
	ctx := context.Background()
	if err := migrations.Postgres.Migrate(ctx, db, nil, func() string { return "2026-01-01T00:00:00Z" }); err != nil {
		t.Fatal(err)
	}
	other, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback()
	if _, err := other.ExecContext(ctx, `LOCK TABLE events IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	type opened struct {
		l   *Ledger
		err error
	}
	done := make(chan opened, 1)
	go func() {
		l, err := Open(ctx, t.TempDir(), WithDatabase(url), Unsigned(), WithBusyTimeout(time.Minute))
		done <- opened{l, err}
	}()
	// The open waits for the events table once it found no id.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		var waiting bool
		if err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock' AND query LIKE '%FROM events%')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		select {
		case o := <-done:
			t.Fatalf("the open ended before it read the events table: %v", o.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the open did not wait for the events table within a minute")
		}
	}
	const id = "0123456789abcdef0123456789abcdef"
	if _, err := db.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('ledger_id', $1), ('created_at', '2026-01-01T00:00:00Z')`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := other.ExecContext(ctx, `INSERT INTO events (seq, event_id, type, lock_name, request_id, actor, at, body, prev_hash, hash)
		VALUES (1, 'evt_other', 'lock_acquired', 'l', 'req_other', 'other', '2026-01-01T00:00:00Z', '\x7b7d', 'genesis', 'h1')`); err != nil {
		t.Fatal(err)
	}
	if err := other.Commit(); err != nil {
		t.Fatal(err)
	}
	o := <-done
	if o.err != nil {
		t.Fatalf("an open that found no ledger id while another open made the ledger: %v (gone: %v)", o.err, errors.Is(o.err, ErrLedgerGone))
	}
	defer o.l.Close()
	if o.l.ID() != id {
		t.Fatalf("the open joined ledger %q, want %q", o.l.ID(), id)
	}
}
