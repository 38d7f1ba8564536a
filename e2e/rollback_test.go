package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/pgtest"
)

// fencingToken is the fencing token an acquire printed with --json.
func fencingToken(t *testing.T, out string) int {
	t.Helper()
	i := strings.Index(out, `"fencing_token":`)
	if i < 0 {
		t.Fatalf("no fencing token in %s", out)
	}
	rest := out[i+len(`"fencing_token":`):]
	n, err := strconv.Atoi(strings.TrimSpace(rest[:strings.IndexAny(rest, ",}")]))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPostgresHostRefusesARolledBackOrAnotherLedger: a host that has
// written to a ledger refuses the database restored from a backup (an
// older head) and another database, naming both ledgers, until
// project --accept-rollback records that the host goes on from there.
// The hosts write as the README's writer role and read as its auditor;
// the backup and restore are the superuser's, project the owner's.
func TestPostgresHostRefusesARolledBackOrAnotherLedger(t *testing.T) {
	t.Parallel()
	c := pgtest.Get(t)
	roles := newREADMERoles(t)
	bak := pgtest.CreateDatabase(t)
	h := newPGHost(t, "web", roles.writer)
	for _, lock := range []string{"a", "b"} {
		rid := strings.TrimSpace(h.must(t, 0, "acquire", lock).Stdout)
		h.must(t, 0, "release", lock, "--request-id", rid)
	}
	// The backup: a copy of the database as it is now (a template has no
	// other session, so the owner's idle connections are closed first).
	if err := c.DropDatabase(bak); err != nil {
		t.Fatal(err)
	}
	roles.ownerDB.SetMaxIdleConns(0)
	if err := c.Exec("CREATE DATABASE " + pgx.Identifier{bak}.Sanitize() + " TEMPLATE " + pgx.Identifier{roles.name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	roles.ownerDB.SetMaxIdleConns(2)
	seen := fencingToken(t, h.must(t, 0, "acquire", "deploy", "--json").Stdout)

	restored := &pgHost{id: h.id, root: h.root, url: roles.at(roles.writer, bak)}
	r := restored.must(t, 1, "acquire", "release-train")
	if !strings.Contains(r.Stderr, "an older state of it") || !strings.Contains(r.Stderr, "seq "+strconv.Itoa(seen)) {
		t.Errorf("the refusal of the restored database does not name both heads: %s", r.Stderr)
	}
	// Another host goes on writing to the restored database, past the
	// head this host saw: another history of the ledger. The copy kept
	// the README's grants: the writer role connects and writes there.
	fleet := newPGHost(t, "other-host", roles.at(roles.writer, bak))
	fleet.trust = filepath.Join(t.TempDir(), "trust")
	for _, lock := range []string{"x", "y", "z"} {
		fleet.must(t, 0, "acquire", lock)
	}
	if r := restored.must(t, 1, "acquire", "release-train"); !strings.Contains(r.Stderr, "another history of it") {
		t.Errorf("the restored database, written past the head seen: %s", r.Stderr)
	}
	other := &pgHost{id: h.id, root: h.root, url: newREADMERoles(t).writer}
	if r := other.must(t, 1, "acquire", "deploy"); !strings.Contains(r.Stderr, "another ledger") {
		t.Errorf("the refusal of another database does not say so: %s", r.Stderr)
	}
	// A reader is not refused; its verify fails against the head this user
	// signed before the restore.
	(&pgHost{id: h.id, root: h.root, url: roles.at(roles.auditor, bak)}).must(t, 1, "verify")

	owner := &pgHost{id: h.id, root: h.root, url: roles.at(roles.owner, bak)}
	r = owner.must(t, 0, "project", "--accept-rollback", "--json")
	if !strings.Contains(r.Stdout, `"rollback_accepted"`) {
		t.Errorf("project --accept-rollback does not report the rollback: %s", r.Stdout)
	}
	// The lost history's holder of deploy still has its lock file here: a
	// lock file the restored ledger did not write, left alone and held.
	restored.must(t, 3, "acquire", "deploy")
	restored.must(t, 0, "acquire", "deploy2")
	var body string
	db := pgtest.Open(t, roles.at(roles.auditor, bak))
	if err := db.QueryRow(`SELECT body FROM events WHERE type = 'ledger_projected'`).Scan(&body); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, `"seq":`+strconv.Itoa(seen)+`}`) || !strings.Contains(body, `"rollback_accepted":{`) {
		t.Errorf("ledger_projected does not record the pin it gave up: %s", body)
	}
	// The root now pins the restored ledger: the original database is the
	// one refused.
	if r := h.must(t, 1, "acquire", "other"); !strings.Contains(r.Stderr, "refusing to write there") {
		t.Errorf("back on the original database: %s", r.Stderr)
	}
}

// TestRestoredLedgerFileIsRefused: ROOT/ledger.db put back from a backup
// (the same ledger, an older head) is refused too.
func TestRestoredLedgerFileIsRefused(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "root")
	rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "a").Stdout)
	clitest.Must(t, 0, root, "release", "a", "--request-id", rid)
	backup := t.TempDir()
	files := []string{"ledger.db", "ledger.db-wal", "ledger.db-shm"}
	copyFiles := func(from, to string) {
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(from, f))
			if os.IsNotExist(err) {
				os.Remove(filepath.Join(to, f))
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(to, f), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	copyFiles(root, backup)
	seen := fencingToken(t, clitest.Must(t, 0, root, "acquire", "deploy", "--json").Stdout)
	clitest.Must(t, 0, root, "acquire", "other")
	copyFiles(backup, root)
	r := clitest.Must(t, 1, root, "acquire", "deploy2")
	if !strings.Contains(r.Stderr, "an older state of it") {
		t.Errorf("the restored ledger.db: %s", r.Stderr)
	}
	clitest.Must(t, 0, root, "project", "--accept-rollback")
	if got := fencingToken(t, clitest.Must(t, 0, root, "acquire", "deploy2", "--json").Stdout); got > seen+1 {
		t.Errorf("token %d after the accepted rollback", got)
	}
}
