package ledger

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/internal/pgtest"
)

// TestASignerWithoutAWitnessRefusesWhatItSignedCut: with no witness, the
// checkpoint this process committed is what the next one must extend. The
// tail cut under it, with the rows that would show it, fails the next
// write whole: nothing appended, nothing signed.
func TestASignerWithoutAWitnessRefusesWhatItSignedCut(t *testing.T) {
	t.Parallel()
	s, v := testKey(t)
	e := open(t, WithSigner(s), WithCheckpointPolicy(1, time.Hour))
	cycle(t, e.l, "a", "r")
	if got := storedCheckpoints(t, e.l, v); fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("checkpoints %v, want [1 2]", got)
	}
	db := pgtest.Open(t, e.l.Source())
	for _, n := range queryStrings(t, db, `SELECT name FROM sqlite_master WHERE type = 'trigger'`) {
		if _, err := db.Exec(`DROP TRIGGER ` + n); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{`DELETE FROM events WHERE seq = 2`, `DELETE FROM tlog_hashes WHERE seq = 2`,
		`DELETE FROM checkpoints`, `DELETE FROM locks WHERE lock_name = 'a'`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	_, err := e.l.TryAcquire(context.Background(), req("b", "r2", 100))
	var ne *checkpoint.NotExtendedError
	if !errors.As(err, &ne) || ne.Earlier.Size != 2 || ne.Earlier.Source != "signed by this process" {
		t.Fatalf("a write on the cut log: %v, want a NotExtendedError against the checkpoint of 2 this process signed", err)
	}
	if n := count(t, e.l); n != 1 {
		t.Fatalf("%d events after the refused write, want the 1 left", n)
	}
	if got := storedCheckpoints(t, e.l, v); len(got) != 0 {
		t.Fatalf("checkpoints %v stored by a refused write", got)
	}
}
