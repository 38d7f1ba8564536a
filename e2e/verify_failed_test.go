package e2e

// A verify that fails: what it leaves behind (a record of the failure,
// nothing signed over the log it found damaged) and what it waits for.

import (
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
)

// TestFailedVerifySignsNothingOverTheDamage: on a root the user pinned,
// an event's body is edited in place (its chain hash and Merkle leaf left
// as they were). Plain verify fails, and records that it failed; but the
// record is covered by no new checkpoint row and the head kept outside the
// root is left byte for byte as it was: a verify never vouches for a log
// it found damaged. A second verify fails the same way.
func TestFailedVerifySignsNothingOverTheDamage(t *testing.T) {
	t.Parallel()
	root, head := defaultRoot(t)
	a := attack(t, root)
	a.exec(t, `UPDATE events SET body = CAST(replace(CAST(body AS TEXT), '"bob"', '"mallory"') AS BLOB) WHERE seq = 3`)
	a.restore(t)
	kept := readFile(t, head)
	var lastRow int64
	if err := clitest.DB(t, root).QueryRow(`SELECT coalesce(max(id), 0) FROM checkpoints`).Scan(&lastRow); err != nil {
		t.Fatal(err)
	}

	for i := range 2 {
		v := clitest.Verify(t, 1, root)
		modified := false
		for _, p := range v.Problems {
			modified = modified || p.Kind == "modified" && p.Seq == 3
		}
		if !modified || v.FirstBad == nil || v.FirstBad.Seq > 3 {
			t.Fatalf("verify %d of a log whose seq 3 was edited: first bad %+v, want seq 3 modified\n%+v", i+1, v.FirstBad, v.Problems)
		}
		if v.Recorded == 0 {
			t.Fatalf("verify %d failed without recording that it did", i+1)
		}
		var result string
		if err := clitest.DB(t, root).QueryRow(`SELECT json_extract(body, '$.result') FROM events WHERE seq = ? AND type = 'ledger_verified'`,
			v.Recorded).Scan(&result); err != nil || result != "failed" {
			t.Fatalf("verify %d's record at seq %d: result %q (%v), want failed", i+1, v.Recorded, result, err)
		}
		if got := readFile(t, head); got != kept {
			t.Fatalf("verify %d failed and replaced the head kept in %s:\nwas %s\nnow %s", i+1, head, kept, got)
		}
		var rows int
		if err := clitest.DB(t, root).QueryRow(`SELECT count(*) FROM checkpoints WHERE id > ?`, lastRow).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		if rows != 0 {
			t.Fatalf("verify %d failed and stored %d checkpoint rows signing the log it found damaged", i+1, rows)
		}
	}
}
