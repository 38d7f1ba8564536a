package replay

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/migrations"
)

// schemaDB is a database with the ledger's schema and a few events.
func schemaDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "ledger.db")+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	if err := migrations.Apply(ctx, db, func() string { return events.FormatTime(testBase) }); err != nil {
		t.Fatal(err)
	}
	for _, r := range goodChain(t, 5) {
		ev, err := DecodeEvent(r.Seq, r.Body)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`INSERT INTO events (seq, event_id, type, lock_name, request_id, actor, at, body, prev_hash, hash)
			VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)`, r.Seq, ev.EventID, ev.Type, ev.LockName, ev.RequestID, ev.Actor, ev.At, r.Body,
			r.PrevHash, r.Hash); err != nil {
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
	db := schemaDB(t)
	ctx := context.Background()
	day := testBase.Add(24 * time.Hour)
	cases := []struct {
		name string
		f    Filter
		want string
	}{
		{"lock", Filter{Lock: "app-prod"}, "USING INDEX events_lock_at (lock_name=?)"},
		{"lock and a day", Filter{Lock: "app-prod", Since: testBase, Until: day}, "USING INDEX events_lock_at (lock_name=? AND at>? AND at<?)"},
		{"lock and actor", Filter{Lock: "app-prod", Actor: "alice"}, "USING INDEX events_lock_at"},
		{"actor since", Filter{Actor: "alice", Since: testBase}, "USING INDEX events_actor_at (actor=? AND at>?)"},
		{"types", Filter{Types: []events.Type{events.LockStolen, events.AcquireBlocked}, Since: testBase}, "USING INDEX events_type_at (type=? AND at>?)"},
		{"window alone", Filter{Since: testBase, Until: day}, "USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"},
		{"as of", Filter{Until: day}, "USING INTEGER PRIMARY KEY"},
	}
	for _, tc := range cases {
		f, _, err := tc.f.narrow(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		q, args := f.query(eventCols)
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

func TestSeqRangeAndScan(t *testing.T) {
	db := schemaDB(t)
	ctx := context.Background()
	// goodChain stamps seq N at base+N s.
	from, to, ok, err := SeqRange(ctx, db, testBase.Add(2*time.Second), testBase.Add(4*time.Second))
	if err != nil || !ok || from != 2 || to != 4 {
		t.Fatalf("SeqRange = %d %d %v %v", from, to, ok, err)
	}
	if _, _, ok, _ := SeqRange(ctx, db, testBase.Add(time.Hour), time.Time{}); ok {
		t.Fatal("SeqRange after the last event matched")
	}
	var seqs []int64
	err = Scan(ctx, db, Filter{Since: testBase.Add(2 * time.Second), Until: testBase.Add(4 * time.Second)}, func(ev *Event) error {
		seqs = append(seqs, ev.Seq)
		if ev.Seq == 3 {
			return ErrStop
		}
		return nil
	})
	if err != nil || len(seqs) != 2 || seqs[0] != 2 || seqs[1] != 3 {
		t.Fatalf("Scan = %v, %v", seqs, err)
	}
	st, err := AsOf(ctx, db, testBase.Add(3*time.Second), "")
	if err != nil || st.Events != 3 || st.Seq != 3 {
		t.Fatalf("AsOf: %+v %v", st, err)
	}
	lk := st.Lock("app-prod")
	if lk.StateAt(testBase.Add(3*time.Second)) != events.StateHeld || lk.StateAt(testBase.Add(64*time.Second)) != events.StateStale ||
		lk.Holder.Heartbeat != testBase.Add(3*time.Second) || lk.UpdatedSeq != 3 {
		t.Fatalf("lock: %+v", lk)
	}
	var none *Lock
	if none.StateAt(testBase) != events.StateFree {
		t.Fatal("a lock never seen is not free")
	}
}
