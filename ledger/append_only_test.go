package ledger

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/internal/oldschema"
)

// rawDB opens a ledger's database as a second, ordinary connection: what
// anyone with write access to the file can do, outside the ledger.
func rawDB(t *testing.T, root string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(root, DBFile)+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// queryStrings runs a query whose rows are one text column.
func queryStrings(t *testing.T, db *sql.DB, query string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// eventRows is every event row as text, in seq order.
func eventRows(t *testing.T, db *sql.DB) string {
	t.Helper()
	return strings.Join(queryStrings(t, db, `SELECT seq || '|' || event_id || '|' || actor || '|' || hash FROM events ORDER BY seq`), "\n")
}

// writeSomeEvents leaves a ledger of a few events at e.root.
func writeSomeEvents(t *testing.T, e *env) {
	t.Helper()
	ctx := context.Background()
	for _, lock := range []string{"a", "b", "c"} {
		if _, err := e.l.TryAcquire(ctx, req(lock, "r-"+lock, 100)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.l.Release(ctx, ReleaseRequest{Lock: "a", Identity: Identity{RequestID: "r-a", Actor: "t", PID: 100}}); err != nil {
		t.Fatal(err)
	}
}

// A REPLACE deletes the row it conflicts with without firing the DELETE
// trigger, and an UPSERT turns an INSERT into an UPDATE: each way of
// rewriting an event through an INSERT is refused, and the log stays as
// it was.
func TestEventsRefuseReplaceAndUpsert(t *testing.T) {
	t.Parallel()
	e := open(t)
	writeSomeEvents(t, e)
	db := rawDB(t, e.root)
	before := eventRows(t, db)
	const cols = `seq, event_id, type, lock_name, request_id, actor, at, body, prev_hash, hash`
	const forged = `event_id, type, lock_name, request_id, 'mallory', at, body, prev_hash, hash`
	for _, c := range []struct {
		name, query, refusal string
	}{
		{"insert or replace at an existing seq", `INSERT OR REPLACE INTO events (` + cols + `)
			SELECT seq, ` + forged + ` FROM events WHERE seq = 2`, "append-only"},
		{"replace into at an existing seq", `REPLACE INTO events (` + cols + `)
			SELECT seq, ` + forged + ` FROM events WHERE seq = 3`, "append-only"},
		{"replace with a new seq and an existing event_id", `INSERT OR REPLACE INTO events (` + cols + `)
			SELECT (SELECT max(seq) + 1 FROM events), ` + forged + ` FROM events WHERE seq = 1`, "append-only"},
		{"insert before the last seq", `INSERT INTO events (` + cols + `)
			SELECT 0, 'forged-id', type, lock_name, request_id, actor, at, body, prev_hash, hash FROM events
			WHERE seq = (SELECT max(seq) FROM events)`, "append-only"},
		{"upsert on seq", `INSERT INTO events (` + cols + `) SELECT ` + cols + ` FROM events WHERE seq = 2
			ON CONFLICT (seq) DO UPDATE SET actor = 'mallory'`, "append-only"},
		{"upsert on event_id", `INSERT INTO events (` + cols + `)
			SELECT (SELECT max(seq) + 1 FROM events), event_id, type, lock_name, request_id, actor, at, body, prev_hash, hash
			FROM events WHERE seq = 2 ON CONFLICT (event_id) DO UPDATE SET actor = 'mallory'`, "append-only"},
	} {
		_, err := db.Exec(c.query)
		if err == nil || !strings.Contains(err.Error(), c.refusal) {
			t.Errorf("%s: err = %v, want a refusal (%s)", c.name, err, c.refusal)
		}
	}
	if after := eventRows(t, db); after != before {
		t.Fatalf("the event log changed:\n%s\nwas:\n%s", after, before)
	}
	// The ledger itself still appends.
	if _, err := e.l.TryAcquire(context.Background(), req("d", "r-d", 100)); err != nil {
		t.Fatal(err)
	}
}

// Without the INSERT trigger (a ledger before it, or one dropped), an
// UPSERT's update is still refused by the UPDATE trigger.
func TestUpsertIntoEventsIsRefusedByTheUpdateTrigger(t *testing.T) {
	t.Parallel()
	e := open(t)
	writeSomeEvents(t, e)
	db := rawDB(t, e.root)
	if _, err := db.Exec(`DROP TRIGGER events_no_replace`); err != nil {
		t.Fatal(err)
	}
	before := eventRows(t, db)
	_, err := db.Exec(`INSERT INTO events SELECT * FROM events WHERE seq = 2 ON CONFLICT (seq) DO UPDATE SET actor = 'mallory'`)
	if err == nil || !strings.Contains(err.Error(), "UPDATE refused") {
		t.Fatalf("upsert: err = %v, want the UPDATE trigger's refusal", err)
	}
	if after := eventRows(t, db); after != before {
		t.Fatalf("the event log changed:\n%s", after)
	}
}

// A ledger written before the INSERT trigger existed gets it when it is
// next opened for writing.
func TestOlderLedgerGetsTheReplaceTriggerOnOpen(t *testing.T) {
	t.Parallel()
	e := open(t)
	writeSomeEvents(t, e)
	if err := e.l.Close(); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, e.root)
	for _, q := range append(slices.Clip(oldschema.Version9), `ALTER TABLE locks DROP COLUMN pid_ns`, `DROP TRIGGER events_no_replace`, `DROP TABLE tlog_hashes`, `DROP TABLE checkpoints`, `DROP TABLE cosignatures`,
		`DROP TRIGGER events_prune_marker`, `DROP TABLE prune_horizon`, `DROP TABLE prune_restore`,
		`DROP TABLE lock_holders`, `DELETE FROM schema_migrations WHERE version >= 3`) {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	l, err := Open(context.Background(), e.root, Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name = 'events_no_replace'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("events_no_replace after the upgrade: %d (%v)", n, err)
	}
	if _, err := db.Exec(`INSERT OR REPLACE INTO events SELECT * FROM events WHERE seq = 1`); err == nil {
		t.Fatal("a REPLACE of seq 1 went through after the upgrade")
	}
}
