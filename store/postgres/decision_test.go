package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/migrations"
	"github.com/lockledger/lockledger/store"
)

// A decision's one read of the head (store.LoadDecision, from its own call
// or from the group's, ReadAhead) brings the Merkle rows the append after
// the head reads, at every size of the tree, and what it reads and writes
// in its calls is what the statements read and write.
func TestDecisionCallsReadAndWriteAsTheStatements(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	s := migratedStore(t, url, 2)
	stmts := store.NewStatements(s)
	for n := int64(1); n <= 40; n++ {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		q := stmts.In(tx)
		known := map[int64][]byte{}
		since := ""
		if n%2 == 1 { // the group's one read, on every other size
			now, err := q.ReadAhead(ctx, []string{"b", "a"})
			if err != nil {
				t.Fatal(err)
			}
			since = store.QueueSince(now)
		}
		_, tip, err := store.LoadDecision(ctx, q, "a", since, true, known)
		if err != nil {
			t.Fatal(err)
		}
		head, _, err := tip.Head(ctx, q, "genesis")
		if err != nil || head != n-1 {
			t.Fatalf("the head read in one call: %d, %v; want %d", head, err, n-1)
		}
		body := fmt.Appendf(nil, `{"seq":%d}`, n)
		var missing []int64
		_, err = tlog.StoredHashes(checkpoint.Index(n), body, checkpoint.CachingRowReader(func(seqs []int64) (map[int64][]byte, error) {
			got := map[int64][]byte{}
			for _, seq := range seqs {
				if known[seq] == nil {
					missing = append(missing, seq)
				}
				got[seq] = known[seq]
			}
			return got, nil
		}))
		if err != nil || len(missing) > 0 {
			t.Fatalf("append of seq %d after the head read in one call: %v; rows not read with it: %v", n, err, missing)
		}
		if err := store.InsertEvent(ctx, q, n, fmt.Sprint("e", n), "lock_acquired", "a", "r", "me", "2026-12-06T00:00:00Z",
			body, fmt.Sprint("h", n-1), fmt.Sprint("h", n)); err != nil {
			t.Fatal(err)
		}
		if err := store.AppendTree(ctx, q, n, body, known); err != nil {
			t.Fatal(err)
		}
		if err := store.SaveHolder(ctx, q, &store.HolderRow{Name: "a", RequestID: fmt.Sprint("s", n), Actor: "me",
			Metadata: "{}", FencingToken: n, Limit: 0, UpdatedSeq: n}); err != nil {
			t.Fatal(err)
		}
		if n > 1 {
			if err := store.DeleteHolder(ctx, q, "a", fmt.Sprint("s", n-1)); err != nil {
				t.Fatal(err)
			}
		}
		if err := store.SaveRow(ctx, q, &store.Row{HolderRow: store.HolderRow{Name: "a", RequestID: "r", FencingToken: n, UpdatedSeq: n},
			File: []byte{0, 1, byte(n)}}); err != nil {
			t.Fatal(err)
		}
		if err := q.Settle(true); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Flush(ctx, nil); err != nil {
			t.Fatal(err)
		}
		r, err := store.LoadRow(ctx, tx, "a")
		if err != nil || r == nil || r.UpdatedSeq != n || !slices.Equal(r.File, []byte{0, 1, byte(n)}) {
			t.Fatalf("the row written in one call: %+v, %v", r, err)
		}
		sh, err := store.LoadShared(ctx, tx, "a")
		if err != nil || len(sh) != 1 || sh[0].RequestID != fmt.Sprint("s", n) {
			t.Fatalf("the shared holders written in one call: %+v, %v", sh, err)
		}
		rc, _, err := store.LoadDecision(ctx, q, "a", "", false, known)
		if err != nil || len(rc.Diff(r)) > 0 {
			t.Fatalf("the row read in one call: %+v, %v; the statement's %+v", rc, err, r)
		}
		shc, err := store.LoadShared(ctx, q, "a")
		if err != nil || len(shc) != 1 || len(shc[0].Diff(sh[0])) > 0 {
			t.Fatalf("the shared holders read in one call: %+v, %v; the statement's %+v", shc, err, sh)
		}
		if err := q.Settle(true); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

// The group's write carries every byte of an event's body, a lock file
// and a Merkle row as it was: each goes as bytea input text, in whichever
// of that input's two forms is the shorter (text bodies and files escaped,
// hashes as hex), inside the JSON argument of one call; and the group's
// read decodes them. So in both of the ways a statement may be sent (the
// URL may ask for the simple protocol, which sends arguments as literals),
// to the server and through PgBouncer in transaction pooling mode.
func TestGroupWriteKeepsEveryByte(t *testing.T) {
	for _, bounced := range []bool{false, true} {
		for _, mode := range []string{"", "simple_protocol"} {
			name := cmp.Or(mode, "exec")
			if bounced {
				name = "pgbouncer/" + name
			}
			t.Run(name, func(t *testing.T) {
				var url string
				if bounced {
					url = pgtest.NewBouncedDatabase(t)
				} else {
					url = pgtest.NewDatabase(t)
				}
				if mode != "" {
					url += "&default_query_exec_mode=" + mode
				}
				groupWriteKeepsEveryByte(t, url)
			})
		}
	}
}

func groupWriteKeepsEveryByte(t *testing.T, url string) {
	ctx := context.Background()
	s := migratedStore(t, url, 2)
	every := make([]byte, 0, 512)
	for i := range 256 {
		every = append(every, byte(i), byte(255-i))
	}
	text := []byte(`{"actor":"a\\\"b\\\\c","metadata":{"k":"<&>\u2028é漢\n\t"},"x":"\\x41"}` + "\n" + `\x41\\041\` + "\x00")
	bodies := [][]byte{text, every, []byte(`\x`), []byte(`\\`), []byte(`{}`)}
	files := [][]byte{every, text, {}, []byte(`\`), []byte("{\n  \"a\": 1\n}\n")}
	hashes := [][]byte{every[:64], text, []byte(`\x00`), every[:32], {0}}
	stmts := store.NewStatements(s)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	q := stmts.In(tx)
	for i := range bodies {
		n := int64(i + 1)
		now, err := q.ReadAhead(ctx, []string{"a"})
		if err != nil {
			t.Fatal(err)
		}
		r, _, err := store.LoadDecision(ctx, q, "a", store.QueueSince(now), i == 0, map[int64][]byte{})
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && (r == nil || !slices.Equal(r.File, files[i-1])) {
			t.Errorf("seq %d: the group's read of the file written before: %+v, want %q", n, r, files[i-1])
		}
		if err := store.InsertEvent(ctx, q, n, fmt.Sprint("e", n), "lock_acquired", "a", "r", "me", "2026-12-07T00:00:00Z",
			bodies[i], fmt.Sprint("h", n-1), fmt.Sprint("h", n)); err != nil {
			t.Fatal(err)
		}
		if err := store.InsertTreeRow(ctx, q, n, hashes[i]); err != nil {
			t.Fatal(err)
		}
		if err := store.SaveRow(ctx, q, &store.Row{HolderRow: store.HolderRow{Name: "a", RequestID: "r", FencingToken: n, UpdatedSeq: n},
			File: files[i]}); err != nil {
			t.Fatal(err)
		}
		if err := q.Settle(true); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Flush(ctx, nil); err != nil {
			t.Fatal(err)
		}
		var body, hash, file []byte
		if err := tx.QueryRowContext(ctx, `SELECT e.body, t.hashes, l.file FROM events e, tlog_hashes t, locks l
			WHERE e.seq = $1 AND t.seq = $1 AND l.lock_name = 'a'`, n).Scan(&body, &hash, &file); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			what      string
			got, want []byte
		}{{"body", body, bodies[i]}, {"hashes", hash, hashes[i]}, {"file", file, files[i]}} {
			if !slices.Equal(c.got, c.want) {
				t.Errorf("seq %d: the %s written in one call is %q, want %q", n, c.what, c.got, c.want)
			}
		}
	}
}

// A group's read (ReadAhead) reads a lock's queue from the waiters
// recorded since, and whether each still waits from its own request's
// events, not from every event of the lock, however empty the tables were
// when the session first read them: lockledger_read_decision's statements
// keep, for the session, the generic plans made at their first calls, and
// 0012's queue, planned on empty tables, fetched every event the lock had,
// at each decision (and again for each waiter).
func TestGroupReadDoesNotRunThroughTheLocksHistory(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	db := pgtest.Open(t, url)
	// One connection: every read below is in the session of the first.
	s := migratedStore(t, url, 1)
	stmts := store.NewStatements(s)
	// fetched is how many rows of events the group's read of lock a
	// fetched, by the session's counters before and after it (which hold
	// the transactions before too, until the session reports them).
	fetched := func() int64 {
		t.Helper()
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		count := func() int64 {
			var n int64
			if err := tx.QueryRowContext(ctx, `SELECT coalesce(sum(idx_tup_fetch + seq_tup_read), 0)
				FROM pg_stat_xact_user_tables WHERE relname = 'events'`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		before := count()
		if _, err := stmts.In(tx).ReadAhead(ctx, []string{"a"}); err != nil {
			t.Fatal(err)
		}
		return count() - before
	}
	for range 10 { // more than the calls after which a cached plan may be generic
		fetched()
	}
	const history = 500
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	q := stmts.In(tx)
	known := map[int64][]byte{}
	at := time.Now().UTC().Format("2006-01-02T15:04:05.000000000Z")
	// The lock's history, then two waiters of which the first has since
	// acquired it: the read's candidates are both, and only the second
	// still waits.
	type event struct{ typ, request string }
	var log []event
	for n := range history {
		log = append(log, event{"lock_acquired", fmt.Sprint("r", n)})
	}
	log = append(log, event{"acquire_blocked", "w1"}, event{"acquire_blocked", "w2"}, event{"lock_acquired", "w1"})
	for i, e := range log {
		n := int64(i + 1)
		body := fmt.Appendf(nil, `{"seq":%d}`, n)
		if err := store.InsertEvent(ctx, q, n, fmt.Sprint("e", n), e.typ, "a", e.request, "me", at,
			body, fmt.Sprint("h", n-1), fmt.Sprint("h", n)); err != nil {
			t.Fatal(err)
		}
		if err := store.AppendTree(ctx, q, n, body, known); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	// The head's rows, the two candidates and their requests' three
	// events: a few rows, not the lock's history.
	if n := fetched(); n > 20 {
		t.Errorf("the group's read of a lock with %d events and two waiters recorded in the waiters' TTL fetched %d rows of events", len(log), n)
	}
	// And the function's queue is the statement's: the second waiter alone.
	since := store.QueueSince(time.Now())
	queued, err := store.LoadQueued(ctx, s.db, "a", since)
	if err != nil {
		t.Fatal(err)
	}
	var read struct{ Queue []store.QueuedRow }
	var raw []byte
	if err := db.QueryRowContext(ctx, `SELECT lockledger_read_decision('a', $1, false)`, since).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &read); err != nil {
		t.Fatal(err)
	}
	if len(queued) != 1 || queued[0].RequestID != "w2" || len(read.Queue) != 1 || read.Queue[0].RequestID != "w2" {
		t.Errorf("the queue of a: %+v by the statement, %+v by the function; want w2 alone", queued, read.Queue)
	}
}

// migratedStore is a store on url's database, its tables made by the
// migrations beforehand, with a pool of pool connections; closed with the
// test.
func migratedStore(t *testing.T, url string, pool int) *Store {
	t.Helper()
	ctx := context.Background()
	if err := migrations.Postgres.Migrate(ctx, pgtest.Open(t, url), nil, func() string { return "" }); err != nil {
		t.Fatal(err)
	}
	s, err := Connect(ctx, Config{URL: url, PoolSize: pool, Wait: time.Minute, Busy: 10 * time.Second, Now: time.Now,
		Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
