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

	// The -shm file is SQLite's shared index of the WAL, which every
	// reader maps and updates; the rest is what a write would change.
	listing := func() string {
		var keep []string
		for _, l := range strings.Split(treeListing(t, root), "\n") {
			if !strings.HasPrefix(l, "ledger.db-shm ") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
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
