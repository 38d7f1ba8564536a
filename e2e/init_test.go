package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
)

// init creates a ledger that readers find (status answers free, verify
// OK), and on a root that holds one says so and writes nothing, with
// --json too.
func TestInitCreatesOnceAndThenWritesNothing(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "fresh")
	r := clitest.Must(t, 0, root, "init", "--json")
	o := jsonOut(t, r)
	if o["status"] != "created" || o["ledger_id"] == "" || o["root"] != root || o["source"] != filepath.Join(root, "ledger.db") {
		t.Fatalf("init --json on a fresh root: %v", o)
	}
	if got := clitest.EventCount(t, root); got != 0 {
		t.Errorf("init recorded %d events, want none", got)
	}
	if r := clitest.Must(t, 0, root, "status", "deploy"); r.Stdout != "deploy: free\n" {
		t.Errorf("status after init: %q", r.Stdout)
	}
	clitest.Must(t, 0, root, "verify")
	clitest.Must(t, 0, root, "acquire", "deploy", "--pid", strconv.Itoa(os.Getpid()))

	listing := func() string { return ledgerListing(t, root) }
	before := listing()
	r = clitest.Must(t, 0, root, "init")
	if !strings.Contains(r.Stdout, "already in "+filepath.Join(root, "ledger.db")+"; nothing written") || !strings.Contains(r.Stdout, o["ledger_id"].(string)) {
		t.Errorf("init on a ledger: %q", r.Stdout)
	}
	if again := jsonOut(t, clitest.Must(t, 0, root, "init", "--json")); again["status"] != "exists" || again["ledger_id"] != o["ledger_id"] {
		t.Errorf("init --json on a ledger: %v", again)
	}
	if after := listing(); after != before {
		t.Errorf("init on a ledger changed the root:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	clitest.Must(t, 2, root, "init", "extra")
}

// init on a ledger written by an older lockledger says it is there and
// leaves it to the next writing command to upgrade.
func TestInitLeavesAnOlderLedgerAsItIs(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	clitest.Must(t, 0, root, "init")
	downgradeSchema(t, root)
	before := ledgerListing(t, root)
	if r := clitest.Must(t, 0, root, "init"); !strings.Contains(r.Stdout, "written by an older lockledger is already in "+root+"; nothing written") {
		t.Errorf("init on an older ledger: %q", r.Stdout)
	}
	if o := jsonOut(t, clitest.Must(t, 0, root, "init", "--json")); o["status"] != "exists" || o["old_schema"] != true || o["root"] != root {
		t.Errorf("init --json on an older ledger: %v", o)
	}
	if after := ledgerListing(t, root); after != before {
		t.Errorf("init changed an older ledger:\n%s\n->\n%s", before, after)
	}
}

// ledgerListing is treeListing of root without what every reader of a
// SQLite ledger touches: the root's own mtime, the -shm file (the WAL
// index readers map and update) and an empty -wal (made by a read-only
// open); what is left is what a write would change.
func ledgerListing(t *testing.T, root string) string {
	var keep []string
	for _, l := range strings.Split(treeListing(t, root), "\n") {
		f := strings.Fields(l)
		if len(f) < 3 || f[0] == "." || f[0] == "ledger.db-shm" || f[0] == "ledger.db-wal" && f[2] == "0" {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}
