package replay

import (
	"context"
	"database/sql"
	"path/filepath"
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

func TestScanAndAsOf(t *testing.T) {
	db := schemaDB(t)
	ctx := context.Background()
	// goodChain stamps seq N at base+N s.
	var seqs []int64
	err := Scan(ctx, db, Filter{Since: testBase.Add(2 * time.Second), Until: testBase.Add(4 * time.Second)}, func(ev *Event) error {
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
