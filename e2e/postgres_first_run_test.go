package e2e

import (
	"strings"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/pgtest"
)

// TestPostgresInitOnARootThatServedAnotherLedger: init of a new database,
// as docs/postgresql.md shows it, on a root that once held a SQLite ledger
// is refused before anything is created (exit 2), with the advice that
// fits: a root of its own for this database; with one, init succeeds.
func TestPostgresInitOnARootThatServedAnotherLedger(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	root := t.TempDir()
	clitest.Must(t, 0, root, "init") // ROOT/ledger.db, pinned at the root
	r := clitest.Run(t, root, "--database", url, "init")
	if r.Code != 2 || !strings.Contains(r.Stderr, "a root serves one ledger") || !strings.Contains(r.Stderr, "--root DIR") ||
		strings.Contains(r.Stderr, "accept-rollback") {
		t.Fatalf("init of a new database on a root that pinned a SQLite ledger: exit %d, stderr %q; want exit 2 advising a root of its own", r.Code, r.Stderr)
	}
	if n := publicTables(t, url); n != "0" {
		t.Fatalf("the refused init created %s tables", n)
	}
	fresh := t.TempDir()
	clitest.Must(t, 0, fresh, "--database", url, "init")
	clitest.Must(t, 0, fresh, "--database", url, "acquire", "deploy-prod")
}
