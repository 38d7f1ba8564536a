package e2e

import (
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/ledger"
)

// importSource writes a small SQLite ledger through the CLI, with one lock
// still held, and returns its root.
func importSource(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "source")
	pid := strconv.Itoa(os.Getpid())
	for _, args := range [][]string{
		{"acquire", "app", "--actor", "tester", "--request-id", "a1", "--pid", pid},
		{"release", "app", "--request-id", "a1"},
		{"acquire", "db", "--actor", "tester", "--request-id", "d1", "--pid", pid, "--ttl", "1h"},
	} {
		if r := clitest.RunWith(t, root, []string{ledger.HostIDEnv + "=importer"}, "", args...); r.Code != 0 {
			t.Fatalf("lockledger %s: exit %d: %s", strings.Join(args, " "), r.Code, r.Stderr)
		}
	}
	return root
}

// pgEvents counts the events of the ledger in the database at url (0 where
// there is no ledger yet).
func pgEvents(t *testing.T, url string) int {
	t.Helper()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var exists bool
	if err := db.QueryRow(`SELECT to_regclass('events') IS NOT NULL`).Scan(&exists); err != nil || !exists {
		return 0
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM events`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestImportRefusesADamagedSourceAndCopiesNothing: a source whose chain is
// broken is refused before anything is copied, so the target stays empty
// and a second import (told to accept the damage) goes through and is
// recorded.
func TestImportRefusesADamagedSourceAndCopiesNothing(t *testing.T) {
	t.Parallel()
	src := importSource(t)
	db := fixture.RawDB(t, src)
	for _, q := range []string{`DROP TRIGGER events_no_update`,
		`UPDATE events SET body = replace(body, '"actor":"tester"', '"actor":"mallory"') WHERE seq = 2`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	url := pgtest.Get(t).SocketURL(pgtest.CreateDatabase(t))
	h := newPGHost(t, "importer", url)
	r := h.must(t, 1, "import", "--from", src)
	if !strings.Contains(r.Stderr, "first bad seq 2") || !strings.Contains(r.Stderr, "nothing was copied") {
		t.Errorf("the refusal does not name the damage: %s", r.Stderr)
	}
	if n := pgEvents(t, url); n != 0 {
		t.Fatalf("a refused import left %d events in the target", n)
	}
	r = h.must(t, 0, "import", "--from", src, "--accept-broken-chain")
	if !strings.Contains(r.Stdout, "first bad seq 2") {
		t.Errorf("the accepted damage is not shown: %s", r.Stdout)
	}
	if n, types := pgEvents(t, url), pgTypes(t, url); types["ledger_projected"] != 1 || n != 3+types["lock_projected"]+1 {
		t.Errorf("after the accepted import: %d events, %v", n, types)
	}
	var accepted bool
	pg, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	if err := pg.QueryRow(`SELECT body LIKE '%"broken_chain_accepted":true%' FROM events WHERE type = 'ledger_projected'`).Scan(&accepted); err != nil || !accepted {
		t.Errorf("the acceptance is not recorded (%v)", err)
	}
}

// TestImportIntoAnotherRootExitsZero: the import's own project run appends
// to the ledger it just verified; a clean import still exits 0, and the
// held lock's file is placed in the new root.
func TestImportIntoAnotherRootExitsZero(t *testing.T) {
	t.Parallel()
	src := importSource(t)
	url := pgtest.Get(t).SocketURL(pgtest.CreateDatabase(t))
	h := newPGHost(t, "importer", url)
	r := h.must(t, 0, "import", "--from", src)
	if !strings.Contains(r.Stdout, "verify: OK") {
		t.Errorf("import: %s", r.Stdout)
	}
	if _, err := os.Stat(filepath.Join(h.root, "locks", "db.lock")); err != nil {
		t.Errorf("the held lock's file is not in the new root: %v", err)
	}
	h.must(t, 3, "acquire", "db", "--actor", "other")
}

// TestImportWaitsForABusySourceTheBusyTimeoutOfTheEnvironment: the
// import holds its source's writer throughout, and waits for it as long as
// LOCKLEDGER_BUSY_TIMEOUT says, as for every ledger a command opens: a
// source whose writer another process holds fails busy after about that
// (1 s), not the default 10 s, and nothing is copied.
func TestImportWaitsForABusySourceTheBusyTimeoutOfTheEnvironment(t *testing.T) {
	t.Parallel()
	src := importSource(t)
	url := pgtest.Get(t).SocketURL(pgtest.CreateDatabase(t))
	h := newPGHost(t, "importer", url)
	holdWriter(t, src)
	start := time.Now()
	r := clitest.RunWith(t, h.root, append(h.env(), invocation.EnvBusyTimeout+"=1s"), "", "import", "--from", src)
	took := time.Since(start)
	if r.Code != 1 || !strings.Contains(r.Stderr, "busy") {
		t.Fatalf("import from a source whose writer is held: exit %d, want 1 saying busy\n%s", r.Code, r.Stderr)
	}
	if took >= ledger.DefaultBusyTimeout {
		t.Errorf("import waited %v for its busy source, with a busy timeout of 1 s", took.Round(time.Millisecond))
	}
	if n := pgEvents(t, url); n != 0 {
		t.Errorf("a failed import left %d events in the target", n)
	}
}
