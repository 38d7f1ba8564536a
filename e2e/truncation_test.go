package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/fixture"
)

// attackSQL runs SQL on root's ledger.db as someone with write access would:
// the append-only triggers dropped first.
func attackSQL(t *testing.T, root string, stmts ...string) {
	t.Helper()
	db := fixture.RawDB(t, root)
	defer db.Close()
	// Whoever can write ROOT removes the root's pin of the ledger too.
	if err := os.Remove(filepath.Join(root, "ledger.pin")); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, s := range append([]string{"DROP TRIGGER IF EXISTS events_no_delete", "DROP TRIGGER IF EXISTS events_no_update"}, stmts...) {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func TestADeletedTailIsDamageThatProjectRefusesToLaunder(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	me, _ := sleeper(t)
	pid := []string{"--pid", strconv.Itoa(me)}
	ra := strings.TrimSpace(clitest.Must(t, 0, root, append([]string{"acquire", "a"}, pid...)...).Stdout)
	clitest.Must(t, 0, root, append([]string{"acquire", "b"}, pid...)...)
	clitest.Must(t, 0, root, "release", "a", "--request-id", ra)
	attackSQL(t, root, "DELETE FROM events WHERE seq = 3")

	rep := clitest.Verify(t, 1, root)
	found := false
	for _, p := range rep.Problems {
		found = found || p.Kind == "truncated" && p.Seq == 3
	}
	if rep.FirstBad == nil || rep.FirstBad.Seq != 3 || !found {
		t.Fatalf("verify of a log whose last event was deleted: %+v, want first bad seq 3 and truncated at seq 3", rep)
	}
	lockFile := filepath.Join(root, "locks", "a.lock")
	before := snapLedger(t, root)
	r := clitest.Run(t, root, "project")
	if r.Code != 1 || !strings.Contains(r.Stderr, "seq 3") {
		t.Fatalf("project over a deleted tail: exit %d, want 1 naming seq 3\n%s", r.Code, r.Stderr)
	}
	if after := snapLedger(t, root); after.String() != before.String() {
		t.Fatalf("a refused project changed the ledger:\n%s\nwas\n%s", after, before)
	}
	if _, err := os.Stat(lockFile); !os.IsNotExist(err) {
		t.Fatalf("a refused project put back the released lock's file (%v)", err)
	}
	clitest.Must(t, 1, root, "verify")
	// Nothing may fill the gap: no audit record, no acquisition reusing the
	// missing seqs (and fencing tokens), until the cut is accepted.
	if n := clitest.EventCount(t, root); n != 2 {
		t.Fatalf("%d events after the cut, want the 2 left: something was appended into the gap", n)
	}
	if r := clitest.Run(t, root, append([]string{"acquire", "c"}, pid...)...); r.Code != 1 || !strings.Contains(r.Stderr, "truncated") {
		t.Fatalf("acquire on a cut log: exit %d, want 1 naming the truncation\n%s", r.Code, r.Stderr)
	}
	clitest.Must(t, 0, root, "project", "--accept-broken-chain")
	clitest.Must(t, 0, root, append([]string{"acquire", "c"}, pid...)...)
}

func TestVerifyFailsOnAnotherLedgersDatabase(t *testing.T) {
	t.Parallel()
	a, b := t.TempDir(), t.TempDir()
	me, _ := sleeper(t)
	clitest.Must(t, 0, a, "acquire", "x", "--pid", strconv.Itoa(me))
	clitest.Must(t, 0, b, "acquire", "y", "--pid", strconv.Itoa(me))
	for _, f := range []string{"ledger.db", "ledger.db-wal", "ledger.db-shm"} {
		os.Remove(filepath.Join(b, f))
		if data, err := os.ReadFile(filepath.Join(a, f)); err == nil {
			if err := os.WriteFile(filepath.Join(b, f), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	if rep := clitest.Verify(t, 1, b); rep.FirstBad == nil || rep.FirstBad.Kind != "swapped" {
		t.Fatalf("verify of another ledger's database in this root: %+v, want first bad swapped", rep)
	}
}
