package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/migrations"
)

var eventsBase = time.Date(2025, 3, 14, 10, 0, 0, 0, time.UTC)

// eventsDB is a database with the ledger's schema and five events of lock
// app-prod by alice, seq N at eventsBase+N s. The plans and seq ranges
// read only the indexed columns, so the bodies need not be events.
func eventsDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "ledger.db")+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := migrations.Apply(context.Background(), db, func() string { return events.FormatTime(eventsBase) }); err != nil {
		t.Fatal(err)
	}
	for seq := int64(1); seq <= 5; seq++ {
		if _, err := db.Exec(`INSERT INTO events (seq, event_id, type, lock_name, request_id, actor, at, body, prev_hash, hash)
			VALUES ($1,$2,'lock_heartbeat','app-prod','r','alice',$3,'{}',$4,$5)`, seq, fmt.Sprint("e", seq),
			events.FormatTime(eventsBase.Add(time.Duration(seq)*time.Second)), fmt.Sprint("h", seq-1), fmt.Sprint("h", seq)); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

func plan(t *testing.T, db *sql.DB, query string, args ...any) string {
	t.Helper()
	rows, err := db.Query("EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, detail)
	}
	return strings.Join(lines, "; ")
}

// TestQueryPlans pins the plans that keep timelines fast on millions of
// events: every filter is served by its index, and a time window alone or
// an as-of replay walks a seq range of the table without sorting.
func TestQueryPlans(t *testing.T) {
	db := eventsDB(t)
	ctx := context.Background()
	day := eventsBase.Add(24 * time.Hour)
	cases := []struct {
		name string
		f    Filter
		want string
	}{
		{"lock", Filter{Lock: "app-prod"}, "USING INDEX events_lock_at (lock_name=?)"},
		{"lock and a day", Filter{Lock: "app-prod", Since: eventsBase, Until: day}, "USING INDEX events_lock_at (lock_name=? AND at>? AND at<?)"},
		{"lock and actor", Filter{Lock: "app-prod", Actor: "alice"}, "USING INDEX events_lock_at"},
		{"actor since", Filter{Actor: "alice", Since: eventsBase}, "USING INDEX events_actor_at (actor=? AND at>?)"},
		{"types", Filter{Types: []events.Type{events.LockStolen, events.AcquireBlocked}, Since: eventsBase}, "USING INDEX events_type_at (type=? AND at>?)"},
		{"window alone", Filter{Since: eventsBase, Until: day}, "USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"},
		{"as of", Filter{Until: day}, "USING INTEGER PRIMARY KEY"},
		// A fold from a snapshot: the rows after it, not the lock's whole history.
		{"lock as of, from a snapshot", Filter{Lock: "app-prod", Until: day, FromSeq: 2, ToSeq: 5}, "USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"},
		{"as of, from a snapshot", Filter{Until: day, FromSeq: 2, ToSeq: 5}, "USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"},
	}
	for _, tc := range cases {
		f, _, err := tc.f.narrow(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		q, args := f.query("seq, body, prev_hash, hash")
		p := plan(t, db, q, args...)
		if !strings.Contains(p, tc.want) {
			t.Errorf("%s: plan %q, want %q", tc.name, p, tc.want)
		}
		if strings.Contains(p, "SCAN events") {
			t.Errorf("%s: full scan: %q", tc.name, p)
		}
		if tc.f.Lock == "" && tc.f.Actor == "" && len(tc.f.Types) == 0 && strings.Contains(p, "TEMP B-TREE") {
			t.Errorf("%s: sorts the whole window: %q", tc.name, p)
		}
	}
	for _, q := range []string{
		lastSeqQuery,
		firstSeqQuery,
	} {
		if p := plan(t, db, q, events.FormatTime(day)); !strings.Contains(p, "COVERING INDEX events_at") {
			t.Errorf("%s: plan %q", q, p)
		}
	}
}

func TestSeqRange(t *testing.T) {
	db := eventsDB(t)
	ctx := context.Background()
	from, to, ok, err := SeqRange(ctx, db, eventsBase.Add(2*time.Second), eventsBase.Add(4*time.Second))
	if err != nil || !ok || from != 2 || to != 4 {
		t.Fatalf("SeqRange = %d %d %v %v", from, to, ok, err)
	}
	if _, _, ok, _ := SeqRange(ctx, db, eventsBase.Add(time.Hour), time.Time{}); ok {
		t.Fatal("SeqRange after the last event matched")
	}
}
