package store

import (
	"cmp"
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
		{"lock", Filter{Lock: "app-prod"}, "USING INDEX events_lock_seq (lock_name=?)"},
		{"lock and a day", Filter{Lock: "app-prod", Since: eventsBase, Until: day}, "USING INDEX events_lock_seq (lock_name=? AND seq>? AND seq<?)"},
		{"lock and actor", Filter{Lock: "app-prod", Actor: "alice"}, "USING INDEX events_lock_seq"},
		{"a lock's page", Filter{Lock: "app-prod", ToSeq: 4}, "USING INDEX events_lock_seq (lock_name=? AND seq<?)"},
		{"actor since", Filter{Actor: "alice", Since: eventsBase}, "USING INDEX events_actor_at (actor=? AND at>?)"},
		{"types", Filter{Types: []events.Type{events.LockStolen, events.AcquireBlocked}, Since: eventsBase}, "USING INDEX events_type_at (type=? AND at>?)"},
		{"window alone", Filter{Since: eventsBase, Until: day}, "USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"},
		{"as of", Filter{Until: day}, "USING INTEGER PRIMARY KEY"},
		// A fold from a snapshot: the rows after it, not the lock's whole history.
		{"lock as of, from a snapshot", Filter{Lock: "app-prod", Until: day, FromSeq: 2, ToSeq: 5}, "USING INDEX events_lock_seq (lock_name=? AND seq>? AND seq<?)"},
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
		if tc.f.Actor == "" && len(tc.f.Types) == 0 && strings.Contains(p, "TEMP B-TREE") {
			t.Errorf("%s: sorts the whole window: %q", tc.name, p)
		}
	}
	// The searches of SeqRange: a block of the log by the primary key, the
	// snapshots' bounds without their states.
	for q, want := range map[string]string{
		`SELECT seq FROM events WHERE seq > $1 AND at || '' >= $2 ORDER BY seq LIMIT 1`:                        "USING INTEGER PRIMARY KEY (rowid>?)",
		`SELECT seq FROM events WHERE seq > $1 AND seq <= $2 AND at || '' <= $3 ORDER BY seq DESC LIMIT 1`:     "USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)",
		`SELECT max(+seq) FROM events WHERE at <= $1 AND +seq <= $2`:                                           "COVERING INDEX events_at (at<?)",
		`SELECT min(+seq) FROM events WHERE at >= $1 AND at <= $2 AND +seq > $3`:                               "COVERING INDEX events_at (at>? AND at<?)",
		`SELECT (SELECT min(seq) FROM events), (SELECT max(seq) FROM events)`:                                  "SEARCH events",
		`SELECT seq, event_hash, max_at, coalesce(min_at, '') FROM snapshots WHERE from_seq = $1 ORDER BY seq`: "COVERING INDEX snapshots_bounds (from_seq=?)",
	} {
		p := plan(t, db, q, 1, 2, 3)
		if !strings.Contains(p, want) || strings.Contains(p, "TEMP B-TREE") || strings.Contains(p, "SCAN events") {
			t.Errorf("%s: plan %q, want %q", q, p, want)
		}
	}
	// SnapshotMarks: the bounds from their index, the rest from each row's
	// leading columns by its key, never a scan or a sort.
	p := plan(t, db, snapshotMarks, 1, 2)
	if want := "SEARCH b USING COVERING INDEX snapshots_bounds (from_seq=? AND seq<?); SEARCH s USING INTEGER PRIMARY KEY (rowid=?)"; p != want {
		t.Errorf("SnapshotMarks: plan %q, want %q", p, want)
	}
}

// The head every append checks reads the end of each table's index, not
// every row of locks and lock_holders: both keep a row for every lock the
// ledger ever named. (Without the index SQLite's plan still says SEARCH
// for the max, and reads the table whole: 100,000 rows, 40-50 ms.)
func TestHeadPlanReadsNoTableWhole(t *testing.T) {
	p := plan(t, eventsDB(t), `SELECT `+tipColumns)
	for _, want := range []string{"COVERING INDEX locks_updated_seq", "COVERING INDEX lock_holders_updated_seq"} {
		if !strings.Contains(p, want) {
			t.Errorf("the head's plan %q does not use %s", p, want)
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

// TestSeqRangeBoundedBySnapshots: the ends of a window, searched only where
// the snapshots' bounds leave them, are the first and last events of the
// window whatever order the clocks gave the events: here one clock steps
// back by an hour in the middle of the log and one by a day near its end,
// one snapshot is missing and one's block is not known.
func TestSeqRangeBoundedBySnapshots(t *testing.T) {
	db := eventsDB(t)
	ctx := context.Background()
	n := 4*SnapshotEvery + 1234
	at := func(seq int64) time.Time {
		switch seq {
		case 12345:
			return eventsBase.Add(time.Duration(seq)*time.Second - time.Hour)
		case 3*SnapshotEvery + 500:
			return eventsBase.Add(100 * time.Second)
		}
		return eventsBase.Add(time.Duration(seq) * time.Second)
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	ins, err := tx.Prepare(`INSERT INTO events (seq, event_id, type, lock_name, request_id, actor, at, body, prev_hash, hash)
			VALUES ($1,$2,'lock_heartbeat','app-prod','r','alice',$3,'{}',$4,$5)`)
	if err != nil {
		t.Fatal(err)
	}
	for seq := int64(6); seq <= n; seq++ {
		if _, err := ins.Exec(seq, fmt.Sprint("e", seq),
			events.FormatTime(at(seq)), fmt.Sprint("h", seq-1), fmt.Sprint("h", seq)); err != nil {
			t.Fatal(err)
		}
	}
	// The snapshots as a writer stores them, but the one at 20000 missing
	// and the block of 40000 not known.
	for _, seq := range []int64{SnapshotEvery, 3 * SnapshotEvery, 4 * SnapshotEvery} {
		if _, err := tx.Exec(`INSERT INTO snapshots (seq, event_hash, from_seq, max_at, version, state_hash, state, min_at)
			SELECT $1, $2, 1, (SELECT max(at) FROM events WHERE seq <= $1), 1, '', x'',
				CASE WHEN $1 = $3 THEN NULL ELSE (SELECT min(at) FROM events WHERE seq > $1 - $3 AND seq <= $1) END`,
			seq, fmt.Sprint("h", seq), 4*SnapshotEvery); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	want := func(since, until time.Time) (from, to int64, ok bool) {
		var lo, hi sql.NullInt64
		if err := db.QueryRow(`SELECT (SELECT min(seq) FROM events WHERE at >= $1), (SELECT max(seq) FROM events WHERE at <= $2)`,
			events.FormatTime(since), events.FormatTime(until)).Scan(&lo, &hi); err != nil {
			t.Fatal(err)
		}
		return lo.Int64, hi.Int64, lo.Valid && lo.Int64 <= hi.Int64
	}
	for _, w := range [][2]int64{{0, 50}, {90, 101}, {99, 200}, {5000, 5100}, {12345 - 3600, 12345 - 3599}, {9000, 11000},
		{9000, 12345}, {12346, 12347}, {25000, 25010}, {30400, 30600}, {39990, 40010}, {n - 10, n + 10}, {n + 5, n + 500}} {
		since, until := eventsBase.Add(time.Duration(w[0])*time.Second), eventsBase.Add(time.Duration(w[1])*time.Second)
		from, to, ok, err := SeqRange(ctx, db, since, until)
		wf, wt, wok := want(since, until)
		if err != nil || ok != wok || (ok && (from != wf || to != wt)) {
			t.Errorf("SeqRange(%ds, %ds) = %d %d %v %v, want %d %d %v", w[0], w[1], from, to, ok, err, wf, wt, wok)
		}
		for _, open := range []struct {
			since, until time.Time
		}{{time.Time{}, until}, {since, time.Time{}}} {
			from, to, ok, err := SeqRange(ctx, db, open.since, open.until)
			wf, wt, wok := want(cmp.Or(open.since, eventsBase.Add(-time.Hour)), cmp.Or(open.until, eventsBase.Add(1000*time.Hour)))
			if err != nil || ok != wok || (ok && (from != wf || to != wt)) {
				t.Errorf("SeqRange(%v, %v) = %d %d %v %v, want %d %d %v", open.since, open.until, from, to, ok, err, wf, wt, wok)
			}
		}
	}
}
