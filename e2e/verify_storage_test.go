package e2e

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/fixture"
)

// storageLedger writes a ledger of a few dozen events through the CLI, big
// enough to fill several pages of the events table and its indexes, and
// folds its WAL into ledger.db so that the file alone holds it.
func storageLedger(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	pad := strings.Repeat("p", 700)
	for i := 0; i < 24; i++ {
		clitest.Must(t, 0, root, "acquire", "l"+strconv.Itoa(i), "--pid", self, "--metadata", "pad="+pad)
	}
	clitest.Must(t, 0, root, "verify", "--full")
	checkpoint(t, root)
	return root
}

// pageOf returns the number of a page of btree name (the middle one of
// those of the given dbstat pagetype) and the page size.
func pageOf(t *testing.T, root, name, pagetype string) (page, size int64) {
	t.Helper()
	db := clitest.DB(t, root)
	if err := db.QueryRow(`PRAGMA page_size`).Scan(&size); err != nil {
		t.Fatal(err)
	}
	var pages []int64
	rows, err := db.Query(`SELECT pageno FROM dbstat WHERE name = ? AND pagetype = ? ORDER BY pageno`, name, pagetype)
	if err != nil {
		t.Fatalf("dbstat: %v", err)
	}
	defer rows.Close()
	for rows.Next() {
		var p int64
		if err := rows.Scan(&p); err != nil {
			t.Fatal(err)
		}
		pages = append(pages, p)
	}
	if len(pages) == 0 {
		t.Fatalf("no %s page of %s", pagetype, name)
	}
	return pages[len(pages)/2], size
}

// overwritePage fills page (1-based) of root's ledger.db with random bytes
// drawn from a fixed seed.
func overwritePage(t *testing.T, root string, page, size int64) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(root, "ledger.db"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, size)
	rng := rand.New(rand.NewPCG(uint64(page), 11))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	if _, err := f.WriteAt(b, (page-1)*size); err != nil {
		t.Fatal(err)
	}
}

// verifyStorage is verify's report of root, as JSON and as text, both
// exiting want.
func verifyStorage(t *testing.T, root string, want int, args ...string) (clitest.VerifyReport, string) {
	t.Helper()
	// As a first verify: one that starts after the head an earlier verify
	// kept reads no page of the file.
	forget := func() {
		if err := os.RemoveAll(filepath.Join(clitest.TrustDir(root), "verified")); err != nil {
			t.Fatal(err)
		}
	}
	forget()
	rep := clitest.Verify(t, want, root, args...)
	forget()
	plain := clitest.Run(t, root, append([]string{"verify"}, args...)...)
	if plain.Code != want {
		t.Fatalf("verify %v: exit %d, want %d\n%s%s", args, plain.Code, want, plain.Stdout, plain.Stderr)
	}
	return rep, plain.Stdout
}

// TestVerifyFailsOnADamagedIndexPage: a page of an index of the events
// overwritten with random bytes. Reading the events in seq order never
// touches it, so only SQLite's own check finds it: verify runs it and
// fails, quoting what SQLite said.
func TestVerifyFailsOnADamagedIndexPage(t *testing.T) {
	t.Parallel()
	root := storageLedger(t)
	page, size := pageOf(t, root, "events_lock_at", "leaf")
	overwritePage(t, root, page, size)
	rep, plain := verifyStorage(t, root, 1)
	if rep.FirstBad == nil || rep.FirstBad.Kind != "storage" || !strings.Contains(rep.FirstBad.Detail, "quick_check") {
		t.Fatalf("first bad = %+v, want SQLite's quick_check as a storage problem\nall: %+v", rep.FirstBad, rep.Problems)
	}
	if !strings.Contains(plain, "verify: FAILED") || !strings.Contains(plain, "storage: SQLite's quick_check says the database is damaged: ") {
		t.Fatalf("plain report:\n%s", plain)
	}
}

// TestVerifyFailsOnEventsTooDamagedToRead: a leaf page of the events table
// in the middle of the file overwritten with random bytes. Reading the
// events fails; verify still reports FAILED, with the read error and
// SQLite's check, instead of an error alone.
func TestVerifyFailsOnEventsTooDamagedToRead(t *testing.T) {
	t.Parallel()
	root := storageLedger(t)
	page, size := pageOf(t, root, "events", "leaf")
	overwritePage(t, root, page, size)
	rep, plain := verifyStorage(t, root, 1)
	if rep.OK || rep.FirstBad == nil || rep.FirstBad.Kind != "storage" {
		t.Fatalf("first bad = %+v, want a storage problem\nall: %+v", rep.FirstBad, rep.Problems)
	}
	var read, check bool
	for _, p := range rep.Problems {
		read = read || p.Kind == "storage" && strings.HasPrefix(p.Detail, "reading the events failed: ")
		check = check || p.Kind == "storage" && strings.HasPrefix(p.Detail, "SQLite's quick_check says the database is damaged: ")
	}
	if !read || !check {
		t.Fatalf("want the failed read and SQLite's check, got %+v", rep.Problems)
	}
	if !strings.Contains(plain, "verify: FAILED") || !strings.Contains(plain, "reading the events failed") {
		t.Fatalf("plain report:\n%s", plain)
	}
}

// TestVerifyFullFindsAnIndexThatDisagreesWithItsTable: two indexes of the
// events swapped under their names (writable_schema, the same SQL kept).
// Every b-tree is sound, so quick_check passes; only integrity_check, which
// compares each index with its table, finds it: verify --full.
func TestVerifyFullFindsAnIndexThatDisagreesWithItsTable(t *testing.T) {
	t.Parallel()
	root := storageLedger(t)
	db := fixture.RawDB(t, root)
	var actorRoot, typeRoot int64
	if err := db.QueryRow(`SELECT (SELECT rootpage FROM sqlite_master WHERE name = 'events_actor_at'),
		(SELECT rootpage FROM sqlite_master WHERE name = 'events_type_at')`).Scan(&actorRoot, &typeRoot); err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`PRAGMA writable_schema = ON`,
		`UPDATE sqlite_master SET rootpage = ` + strconv.FormatInt(typeRoot, 10) + ` WHERE name = 'events_actor_at'`,
		`UPDATE sqlite_master SET rootpage = ` + strconv.FormatInt(actorRoot, 10) + ` WHERE name = 'events_type_at'`,
		`PRAGMA writable_schema = OFF`} {
		if _, err := conn.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	conn.Close()
	db.Close()

	clitest.Must(t, 2, root, "verify", "--full", "--file", filepath.Join(root, "any.jsonl"))
	if rep, _ := verifyStorage(t, root, 0); !rep.OK {
		t.Fatalf("quick_check should find nothing: %+v", rep.Problems)
	}
	rep, plain := verifyStorage(t, root, 1, "--full")
	if rep.FirstBad == nil || rep.FirstBad.Kind != "storage" || !strings.Contains(rep.FirstBad.Detail, "integrity_check") ||
		!strings.Contains(rep.FirstBad.Detail, "events_actor_at") && !strings.Contains(rep.FirstBad.Detail, "events_type_at") {
		t.Fatalf("first bad = %+v, want integrity_check naming a swapped index\nall: %+v", rep.FirstBad, rep.Problems)
	}
	if !strings.Contains(plain, "storage: SQLite's integrity_check says the database is damaged: ") {
		t.Fatalf("plain report:\n%s", plain)
	}
}
