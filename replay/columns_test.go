package replay_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/verify"
)

// TestVerifyColumnsExact tampers with the indexed columns in every awkward
// way (the separator verify reads them joined by, NUL bytes, empty values,
// BLOBs, invalid UTF-8) and checks that verify reports exactly the columns
// that differ from their body, with their exact values, whether it reads
// through a transaction (as the CLI does) or a pool.
func TestVerifyColumnsExact(t *testing.T) {
	root := t.TempDir()
	genesis := genLedger(t, root, 120, 7)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(root, ledger.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`DROP TRIGGER events_no_update`)
	var actor3, at9 string
	if err := db.QueryRow(`SELECT actor FROM events WHERE seq = 3`).Scan(&actor3); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT at FROM events WHERE seq = 9`).Scan(&at9); err != nil {
		t.Fatal(err)
	}
	exec(`UPDATE events SET actor = ? WHERE seq = 2`, "mallory\x1f")
	exec(`UPDATE events SET actor = CAST(? AS BLOB) WHERE seq = 3`, actor3) // same bytes, as a BLOB: no finding
	exec(`UPDATE events SET lock_name = ?, type = ? WHERE seq = 5`, "a\x1fb\x1fc", "")
	exec(`UPDATE events SET request_id = ? WHERE seq = 7`, "x\x00y")
	exec(`UPDATE events SET at = ? WHERE seq = 9`, at9+"\x1f")
	exec(`UPDATE events SET event_id = CAST(? AS BLOB) WHERE seq = 11`, "\xff\x1f\x1f\x1f\x1f\x1f")
	exec(`UPDATE events SET actor = ?, at = ? WHERE seq = 13`, "\x1f\x1f\x1f\x1f\x1f", "")
	exec(`UPDATE events SET event_id = '', type = '', lock_name = '', request_id = '', actor = '', at = '' WHERE seq = 15`)

	// The reference: each column read on its own, against the body.
	want := map[int64][]string{}
	rows, err := db.Query(`SELECT seq, event_id, type, lock_name, request_id, actor, at, body FROM events ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var seq int64
		var cols [6]string
		var body []byte
		if err := rows.Scan(&seq, &cols[0], &cols[1], &cols[2], &cols[3], &cols[4], &cols[5], &body); err != nil {
			t.Fatal(err)
		}
		var env events.Envelope
		if err := json.Unmarshal(body, &env); err != nil {
			t.Fatal(err)
		}
		for i, b := range []string{env.EventID, string(env.Type), env.LockName, env.RequestID, env.Actor, env.At} {
			if cols[i] != b {
				name := []string{"event_id", "type", "lock_name", "request_id", "actor", "at"}[i]
				want[seq] = append(want[seq], fmt.Sprintf("%s column %q, body %q", name, cols[i], b))
			}
		}
	}
	rows.Close()
	if len(want) != 7 {
		t.Fatalf("the tampering changed %d rows, want 7: %v", len(want), want)
	}

	ctx := context.Background()
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for name, q := range map[string]replay.Querier{"tx": tx, "db": db} {
		rep, _, err := replay.VerifyLedger(ctx, q, "test", genesis)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		rep.Finish()
		got := map[int64]string{}
		for _, p := range rep.Problems {
			if p.Kind != verify.KindColumnMismatch {
				t.Errorf("%s: unexpected finding %+v", name, p)
				continue
			}
			got[p.Seq] = p.Detail
		}
		for seq, parts := range want {
			if got[seq] != strings.Join(parts, "; ") {
				t.Errorf("%s: seq %d: %q, want %q", name, seq, got[seq], strings.Join(parts, "; "))
			}
		}
		if len(got) != len(want) {
			t.Errorf("%s: findings for seqs %v, want %v", name, got, want)
		}
	}
}
