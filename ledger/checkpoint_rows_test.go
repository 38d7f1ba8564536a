package ledger

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/checkpoint"
)

// checkpointRows is every checkpoint row as text, in id order.
func checkpointRows(t *testing.T, db *sql.DB) string {
	t.Helper()
	return strings.Join(queryStrings(t, db, `SELECT id || '|' || size || '|' || root || '|' || key_name || '|' || note FROM checkpoints ORDER BY id`), "\n")
}

func treeRows(t *testing.T, db *sql.DB) string {
	t.Helper()
	var s string
	if err := db.QueryRow(`SELECT group_concat(seq || ':' || hex(hashes), ',') FROM (SELECT * FROM tlog_hashes ORDER BY seq)`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// A REPLACE deletes the row it conflicts with without firing the DELETE
// triggers, and an UPSERT turns an INSERT into an UPDATE: each is refused
// on the Merkle rows and the checkpoints as on the events, and so is a
// checkpoint row covering events the log does not hold.
func TestTreeRowsRefuseReplaceUpsertAndCheckpointsBeyondTheLog(t *testing.T) {
	t.Parallel()
	s, _ := testKey(t)
	e := open(t, WithSigner(s), WithCheckpointPolicy(2, time.Hour))
	writeSomeEvents(t, e)
	db := rawDB(t, e.root)
	cps, tree := checkpointRows(t, db), treeRows(t, db)
	const cpCols = `id, size, root, note, key_name, created_at`
	for _, c := range []struct{ name, query string }{
		{"insert or replace a checkpoint", `INSERT OR REPLACE INTO checkpoints (` + cpCols + `)
			SELECT id, size, root, 'forged', key_name, created_at FROM checkpoints WHERE id = 1`},
		{"replace into checkpoints", `REPLACE INTO checkpoints (` + cpCols + `)
			SELECT id, size, root, 'forged', key_name, created_at FROM checkpoints WHERE id = 1`},
		{"upsert a checkpoint", `INSERT INTO checkpoints (` + cpCols + `) SELECT ` + cpCols + ` FROM checkpoints WHERE id = 1
			ON CONFLICT (id) DO UPDATE SET note = 'forged'`},
		{"upsert a checkpoint doing nothing", `INSERT INTO checkpoints (` + cpCols + `) SELECT ` + cpCols + ` FROM checkpoints WHERE id = 1
			ON CONFLICT (id) DO NOTHING`},
		{"a checkpoint beyond the log", `INSERT INTO checkpoints (size, root, note, key_name, created_at)
			VALUES (1000000000000, 'x', 'garbage', 'ops', '2026-01-02T10:00:00Z')`},
		{"a checkpoint of no events", `INSERT INTO checkpoints (size, root, note, key_name, created_at)
			VALUES (0, 'x', 'garbage', 'ops', '2026-01-02T10:00:00Z')`},
		{"insert or replace Merkle hashes", `INSERT OR REPLACE INTO tlog_hashes (seq, hashes) SELECT seq, zeroblob(length(hashes)) FROM tlog_hashes WHERE seq = 2`},
		{"replace into Merkle hashes", `REPLACE INTO tlog_hashes (seq, hashes) SELECT seq, zeroblob(length(hashes)) FROM tlog_hashes WHERE seq = 3`},
		{"upsert Merkle hashes", `INSERT INTO tlog_hashes (seq, hashes) SELECT seq, hashes FROM tlog_hashes WHERE seq = 2
			ON CONFLICT (seq) DO UPDATE SET hashes = zeroblob(32)`},
	} {
		_, err := db.Exec(c.query)
		if err == nil || !strings.Contains(err.Error(), "lockledger:") {
			t.Errorf("%s: err = %v, want the trigger's refusal", c.name, err)
		}
	}
	if got := checkpointRows(t, db); got != cps {
		t.Fatalf("the checkpoints changed:\n%s\nwas:\n%s", got, cps)
	}
	if got := treeRows(t, db); got != tree {
		t.Fatalf("the Merkle rows changed:\n%s\nwas:\n%s", got, tree)
	}
	// The ledger itself still appends and signs.
	cycle(t, e.l, "z", "r-z")
	if got := checkpointRows(t, db); got == cps {
		t.Fatal("no checkpoint signed after the refusals")
	}
}

// A checkpoint row the writer's key did not sign vouches for nothing: a
// writer never takes one (a huge size, garbage, another key's, a copy of
// its own note in a row that claims more) as the last checkpoint signed,
// and signs the one that is due.
func TestWriterSignsPastACheckpointRowItsKeyDidNotSign(t *testing.T) {
	t.Parallel()
	other, _ := testKey(t)
	for _, c := range []struct{ name, row string }{
		{"a huge size", `SELECT 1000000000000, 'x', 'garbage', 'ops', '2026-01-02T10:00:00Z'`},
		{"garbage at the log's size", `SELECT (SELECT max(seq) FROM events), 'x', 'garbage', 'ops', '2099-01-01T00:00:00Z'`},
		{"its own note under a larger size", `SELECT (SELECT max(seq) FROM events), root, note, key_name, '2099-01-01T00:00:00Z'
			FROM checkpoints ORDER BY id LIMIT 1`},
		{"another key's", "OTHER"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, v := testKey(t)
			e := open(t, WithSigner(s), WithCheckpointPolicy(1000, time.Hour))
			writeSomeEvents(t, e) // signs at size 1
			db := rawDB(t, e.root)
			// The attacker can drop the triggers: the writer must not need them.
			if _, err := db.Exec(`DROP TRIGGER IF EXISTS checkpoints_within_log`); err != nil {
				t.Fatal(err)
			}
			row := c.row
			if row == "OTHER" {
				var n int64
				if err := db.QueryRow(`SELECT max(seq) FROM events`).Scan(&n); err != nil {
					t.Fatal(err)
				}
				note, err := checkpoint.Sign(checkpoint.Checkpoint{Origin: checkpoint.Origin(e.l.ID()), Size: n, Time: e.clock.Now()}, other)
				if err != nil {
					t.Fatal(err)
				}
				row = fmt.Sprintf(`SELECT %d, 'x', '%s', 'ops', '2099-01-01T00:00:00Z'`, n, strings.ReplaceAll(string(note), "'", "''"))
			}
			if _, err := db.Exec(`INSERT INTO checkpoints (size, root, note, key_name, created_at) ` + row); err != nil {
				t.Fatal(err)
			}
			cycle(t, e.l, "w", "r-w")
			var size int64
			var msg string
			if err := db.QueryRow(`SELECT size, note FROM checkpoints ORDER BY id DESC LIMIT 1`).Scan(&size, &msg); err != nil {
				t.Fatal(err)
			}
			if _, err := checkpoint.Open([]byte(msg), v); err != nil || size != int64(count(t, e.l)-1) {
				t.Fatalf("the last checkpoint row after a write: size %d, %v; want one signed by the writer's key, of %d events", size, err, count(t, e.l)-1)
			}
		})
	}
}
