package store

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
)

// LoadRowTip reads a lock's row and the head of the log in one statement,
// and its Tip checks the head as Head does; a lock with no row leaves the
// head to Head.
func TestLoadRowTipIsLoadRowAndHeadInOneStatement(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite-parsing", filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, ddl := range []string{
		`CREATE TABLE locks (lock_name TEXT PRIMARY KEY, request_id TEXT, host_id TEXT, fencing_token INTEGER,
			updated_seq INTEGER, file BLOB, targets TEXT)`,
		`CREATE TABLE lock_holders (lock_name TEXT, request_id TEXT, actor TEXT, intent TEXT, intent_version TEXT,
			host_id TEXT, pid INTEGER, pid_start TEXT, boot_id TEXT, created_at TEXT, heartbeat_at TEXT, ttl_seconds INTEGER,
			metadata TEXT, fencing_token INTEGER, slot_limit INTEGER, updated_seq INTEGER, pid_ns INTEGER,
			exclusive INTEGER, targets TEXT, PRIMARY KEY (lock_name, request_id))`,
		`CREATE TABLE events (seq INTEGER PRIMARY KEY, hash TEXT)`,
		`CREATE TABLE tlog_hashes (seq INTEGER PRIMARY KEY, hashes BLOB)`,
		`INSERT INTO events VALUES (1, 'h1'), (2, 'h2')`,
		`INSERT INTO tlog_hashes VALUES (1, x'00'), (2, x'00')`,
	} {
		if _, err := db.Exec(ddl); err != nil {
			t.Fatal(err)
		}
	}
	if err := SaveRow(ctx, db, &Row{HolderRow: HolderRow{Name: "a", RequestID: "r", Actor: "me", UpdatedSeq: 2}, Held: true, File: []byte("f")}); err != nil {
		t.Fatal(err)
	}
	if err := SaveHolder(ctx, db, &HolderRow{Name: "a", RequestID: "r", Actor: "me", Limit: 1, UpdatedSeq: 2, Exclusive: true}); err != nil {
		t.Fatal(err)
	}
	parsed.Store(0)
	r, tip, err := LoadRowTip(ctx, db, "a")
	if err != nil {
		t.Fatal(err)
	}
	if n := parsed.Load(); n != 1 {
		t.Errorf("LoadRowTip ran %d statements, want 1", n)
	}
	want, _ := LoadRow(ctx, db, "a")
	if d := r.Diff(want); len(d) > 0 || r.Name != "a" {
		t.Errorf("LoadRowTip's row differs from LoadRow's in %v", d)
	}
	if !r.Held || r.Actor != "me" || !want.Held || want.Actor != "me" {
		t.Errorf("the exclusive holder was not read with the row: LoadRowTip %+v, LoadRow %+v", r, want)
	}
	parsed.Store(0)
	if seq, hash, err := tip.Head(ctx, db, "genesis"); err != nil || seq != 2 || hash != "h2" {
		t.Errorf("tip.Head = %d, %q, %v; want 2, h2", seq, hash, err)
	}
	if n := parsed.Load(); n != 0 {
		t.Errorf("the head read with the row was read again (%d statements)", n)
	}

	r, tip, err = LoadRowTip(ctx, db, "none")
	if err != nil || r != nil {
		t.Fatalf("no row: %v, %v", r, err)
	}
	if seq, hash, err := tip.Head(ctx, db, "genesis"); err != nil || seq != 2 || hash != "h2" {
		t.Errorf("no row: tip.Head = %d, %q, %v; want 2, h2 read by Head", seq, hash, err)
	}

	if _, err := db.Exec(`DELETE FROM events WHERE seq = 2`); err != nil {
		t.Fatal(err)
	}
	_, tip, err = LoadRowTip(ctx, db, "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := tip.Head(ctx, db, "genesis"); !errors.Is(err, ErrTruncated) {
		t.Errorf("a cut log read with the row: %v, want ErrTruncated", err)
	}
}
