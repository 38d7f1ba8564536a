package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/pgtest"
)

func TestPostgresFollowerIsWokenByNotify(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	writer, reader := newPGHost(t, "host-w", url), newPGHost(t, "host-r", url)
	clitest.Race(t, reader.root)
	if r := reader.run(t, "export", "--follow"); r.Code != 6 {
		t.Fatalf("export --follow of a database with no ledger: exit %d, want 6\nstderr: %s", r.Code, r.Stderr)
	}
	writer.must(t, 0, "acquire", "pg-seed", "-q")

	f := startFollower(t, reader.root, reader.env(), "export", "--follow")
	f.await(t, "seq 1", hasSeq(1))
	// Each record arrives well before the safety re-read: only the
	// notification of the write can have woken the follower.
	writer.must(t, 0, "acquire", "pg-next", "-q")
	f.awaitWithin(t, underRecheck, "seq 2, appended while following", hasSeq(2))
	// A write of no lock (export records itself) notifies too.
	writer.must(t, 0, "export", "-o", filepath.Join(t.TempDir(), "x.jsonl"))
	lines := f.awaitWithin(t, underRecheck, "the ledger_exported event", hasSeq(3))
	if !strings.Contains(strings.Join(lines, "\n"), `"type":"ledger_exported"`) {
		t.Errorf("seq 3 is not the export's record:\n%s", strings.Join(lines, "\n"))
	}
	code, all := f.stop(t, syscall.SIGTERM)
	if code != 0 {
		t.Fatalf("SIGTERM: exit %d, want 0; stderr:\n%s", code, f.errText())
	}
	seen := map[int64]int{}
	for _, l := range parseStream(t, all) {
		if l.Seq != nil {
			seen[*l.Seq]++
		}
	}
	if fmt.Sprint(seen) != "map[1:1 2:1 3:1]" {
		t.Errorf("seqs received: %v, want 1, 2 and 3 once each", seen)
	}
}
