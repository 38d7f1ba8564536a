package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
)

// ReadTreeRows reads any number of rows, treeRowsAtOnce a statement (the
// last one or two by themselves), and leaves out those that are not stored.
func TestReadTreeRowsReadsManyInFewStatements(t *testing.T) {
	ctx := context.Background()
	parsed.Store(0)
	db, err := sql.Open("sqlite-parsing", filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE tlog_hashes (seq INTEGER PRIMARY KEY, hashes BLOB NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for seq := int64(1); seq <= 70; seq++ {
		if seq == 33 {
			continue
		}
		if _, err := db.Exec(`INSERT INTO tlog_hashes (seq, hashes) VALUES (?, ?)`, seq, []byte(fmt.Sprint("row", seq))); err != nil {
			t.Fatal(err)
		}
	}
	var seqs []int64
	for seq := int64(70); seq >= 1; seq-- {
		seqs = append(seqs, seq)
	}
	seqs = append(seqs, 0, 71, 72) // 73 rows: 9 statements of 8, then one row by itself
	parsed.Store(0)
	got, err := ReadTreeRows(ctx, db, seqs)
	if err != nil {
		t.Fatal(err)
	}
	if n := parsed.Load(); n != 10 {
		t.Errorf("73 rows asked for in %d statements, want 10", n)
	}
	if len(got) != 69 {
		t.Errorf("got %d rows, want the 69 stored", len(got))
	}
	for _, seq := range []int64{0, 33, 71, 72} {
		if _, ok := got[seq]; ok {
			t.Errorf("row %d is not stored but was returned", seq)
		}
	}
	if string(got[70]) != "row70" || string(got[1]) != "row1" {
		t.Errorf("rows 70 and 1: %q, %q", got[70], got[1])
	}
}
