package replay

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/migrations"
)

// manyRowsDB is a database with the ledger's schema and n chained events
// (the same lock acquired by one request, heartbeats after it), the body of
// seq bad replaced by one that does not decode (0: none).
func manyRowsDB(t *testing.T, n int, bad int64) *sql.DB {
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
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range goodChain(t, n) {
		ev, err := DecodeEvent(r.Seq, r.Body)
		if err != nil {
			t.Fatal(err)
		}
		body := r.Body
		if r.Seq == bad {
			body = []byte("not an event")
		}
		if _, err := tx.Exec(`INSERT INTO events (seq, event_id, type, lock_name, request_id, actor, at, body, prev_hash, hash)
			VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)`, r.Seq, ev.EventID, ev.Type, ev.LockName, ev.RequestID, ev.Actor, ev.At, body,
			r.PrevHash, r.Hash); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestAsOfReadsAheadOfTheFold: a log longer than the rows the reader may
// hold ahead folds whole; a body that does not decode, far before the end
// (the reader then waits on a full queue), ends AsOf with an error naming
// its seq; so does a context ended before it starts.
func TestAsOfReadsAheadOfTheFold(t *testing.T) {
	n := 3 * readAheadBatches * pipelineBatch
	ctx := context.Background()
	st, err := AsOf(ctx, manyRowsDB(t, n, 0), time.Time{}, "")
	if err != nil || st.Events != int64(n) || st.Seq != int64(n) {
		t.Fatalf("AsOf of %d events: %+v, %v", n, st, err)
	}
	_, err = AsOf(ctx, manyRowsDB(t, n, 100), time.Time{}, "")
	if err == nil || !strings.Contains(err.Error(), "seq 100:") {
		t.Fatalf("AsOf with seq 100 undecodable: %v", err)
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := AsOf(ended, manyRowsDB(t, 10, 0), time.Time{}, ""); !errors.Is(err, context.Canceled) {
		t.Fatalf("AsOf with an ended context: %v", err)
	}
}

// TestAsOfNamesTheSeqOfAMissingBody: a body made NULL behind the schema's
// back (its NOT NULL and the no-update trigger taken out) ends AsOf with
// the error of a body that does not decode, naming its seq, as any other
// unreadable body does.
func TestAsOfNamesTheSeqOfAMissingBody(t *testing.T) {
	db := manyRowsDB(t, 200, 0)
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DROP TRIGGER events_no_update`, `PRAGMA writable_schema = ON`,
		`UPDATE sqlite_master SET sql = replace(sql, 'body       BLOB    NOT NULL', 'body BLOB') WHERE name = 'events'`,
		`PRAGMA writable_schema = OFF`} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	conn.Close()
	db.SetMaxIdleConns(0) // the next query reads the edited schema afresh
	db.SetMaxIdleConns(2)
	if _, err := db.Exec(`UPDATE events SET body = NULL WHERE seq = 100`); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM events WHERE body IS NULL`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("NULL bodies: %d, %v", n, err)
	}
	_, err = AsOf(ctx, db, time.Time{}, "")
	if err == nil || !strings.Contains(err.Error(), "event seq 100: body does not decode") {
		t.Fatalf("AsOf with seq 100's body NULL: %v", err)
	}
}
