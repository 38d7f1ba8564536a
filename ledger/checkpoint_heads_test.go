package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/trust"
)

// TestEveryWriteKeepsAHeadTheNextWriterMustExtend: with WithHeads, every
// write signs a head of the whole log (stored rows keep their policy); a
// writer in another process, which remembers nothing, refuses a log cut
// under the head kept, and changes nothing.
func TestEveryWriteKeepsAHeadTheNextWriterMustExtend(t *testing.T) {
	t.Parallel()
	s, v := testKey(t)
	heads := trust.Heads{Dir: t.TempDir()}
	e := open(t, WithSigner(s), WithHeads(heads.Dir))
	heads.Root = e.l.Root()
	cycle(t, e.l, "a", "r1")
	cycle(t, e.l, "b", "r2")
	if got := storedCheckpoints(t, e.l, v); fmt.Sprint(got) != "[1]" {
		t.Fatalf("checkpoint rows %v, want [1]: the policy's, not one a write", got)
	}
	kept, err := heads.Last(e.l.ID(), v)
	if err != nil || kept == nil || kept.Size != 4 {
		t.Fatalf("head kept: %+v, %v; want size 4", kept, err)
	}
	db := pgtest.Open(t, e.l.Source())
	for _, q := range []string{`DROP TRIGGER events_no_delete`, `DROP TRIGGER tlog_hashes_no_delete`,
		`DELETE FROM events WHERE seq > 2`, `DELETE FROM tlog_hashes WHERE seq > 2`, `DELETE FROM locks WHERE lock_name = 'b'`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	other, err := Open(context.Background(), e.root, WithClock(e.clock.Now), WithProcessProbe(e.probe),
		WithHost(Host{ID: "host-a", BootID: "boot-1"}), WithSigner(s), WithHeads(heads.Dir))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, err = other.TryAcquire(context.Background(), req("c", "r3", 100))
	var ne *checkpoint.NotExtendedError
	if !errors.As(err, &ne) || ne.Earlier.Size != 4 || !strings.Contains(ne.Earlier.Source, heads.Path(e.l.ID())) {
		t.Fatalf("a write on the cut log: %v, want a NotExtendedError against the head of 4 kept in %s", err, heads.Dir)
	}
	if n := count(t, other); n != 2 {
		t.Fatalf("%d events after the refused write, want the 2 left", n)
	}
	if again, _ := heads.Last(e.l.ID(), v); again == nil || again.Size != 4 {
		t.Fatalf("the head kept after the refused write: %+v", again)
	}
}
