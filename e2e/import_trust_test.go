package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/pgtest"
)

// TestImportKeepsTheRootsTrust runs docs/postgresql.md's "Moving a ledger
// from SQLite" as written, by the user who wrote the source (the same
// trust store, which pins the source's ledger at the root): the import
// exits 0, later writes through the root go on, and verify says OK.
func TestImportKeepsTheRootsTrust(t *testing.T) {
	t.Parallel()
	src := importSource(t)
	clitest.Must(t, 0, src, "verify")
	url := pgtest.NewDatabase(t)
	move, _ := shellScript(readmeSection(t, "**Moving a ledger from SQLite.**", "The ledger keeps its id"))
	args := strings.Fields(strings.TrimSpace(move))
	if len(args) != 8 || args[0] != "lockledger" || args[5] != "import" {
		t.Fatalf("the documented import is not one command of the expected shape: %q", move)
	}
	args = args[1:]
	for i, a := range args {
		switch {
		case a == "/var/lib/lockledger":
			args[i] = src
		case strings.HasPrefix(a, "postgres://"):
			args[i] = url
		}
	}
	r := clitest.RunWith(t, src, nil, "", args...)
	if r.Code != 0 || !strings.Contains(r.Stdout, "verify: OK") {
		t.Fatalf("the documented import: exit %d\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
	}
	on := []string{"--root", src, "--database", url}
	if r := clitest.RunWith(t, src, nil, "", append(on, "acquire", "after-move", "--pid", "0", "--ttl", "1m")...); r.Code != 0 {
		t.Fatalf("a write after the import: exit %d\nstderr: %s", r.Code, r.Stderr)
	}
	if r := clitest.RunWith(t, src, nil, "", append(on, "verify")...); r.Code != 0 || !strings.Contains(r.Stdout, "verify: OK") {
		t.Errorf("verify after the import and a write: exit %d\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
	}
}

// TestImportWithASigningKeyPinsTheLedgerImported: an import into another
// root, signed with an explicit --signing-key, pins the ledger it imported
// for the new root, not the empty database's id: later writes there go
// on and verify says OK, not "swapped".
func TestImportWithASigningKeyPinsTheLedgerImported(t *testing.T) {
	t.Parallel()
	src := importSource(t)
	key := filepath.Join(t.TempDir(), "ops.key")
	clitest.Must(t, 0, src, "keygen", "--name", "ops", "-o", key)
	h := newPGHost(t, "importer", pgtest.NewDatabase(t))
	h.must(t, 0, "--signing-key", key, "import", "--from", src)
	h.must(t, 0, "--signing-key", key, "acquire", "after-move", "--pid", "0", "--ttl", "1m")
	if r := h.must(t, 0, "--signing-key", key, "verify"); !strings.Contains(r.Stdout, "verify: OK") {
		t.Errorf("verify after the import and a write: %s", r.Stdout)
	}
}

// TestCopyOfARootSignedWithAnExplicitKeyVerifies: a root this user wrote
// with the trust store's key (which keeps the ledger's head) and then with
// an explicit --signing-key, copied to a new path and written there with
// that key: the copy's pin names only the explicit key, so the kept head,
// signed by the trust store's, is a checkpoint by a key no pin names: left
// unchecked, not taken for a witness that was emptied.
func TestCopyOfARootSignedWithAnExplicitKeyVerifies(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := filepath.Join(dir, "ops.key")
	src, copied := filepath.Join(dir, "source"), filepath.Join(dir, "copy")
	clitest.Must(t, 0, src, "keygen", "--name", "ops", "-o", key)
	clitest.Must(t, 0, src, "acquire", "app", "--pid", "0", "--ttl", "1m")
	clitest.Must(t, 0, src, "--signing-key", key, "release", "app", "--force", "--yes", "--reason", "done")
	if out, err := exec.Command("cp", "-a", src, copied).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v: %s", err, out)
	}
	clitest.Must(t, 0, copied, "--signing-key", key, "acquire", "other", "--pid", "0", "--ttl", "1m")
	for _, args := range [][]string{{"verify"}, {"--signing-key", key, "verify"}} {
		if r := clitest.RunWith(t, copied, nil, "", args...); r.Code != 0 || !strings.Contains(r.Stdout, "verify: OK") {
			t.Errorf("lockledger %s on the copy: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.Code, r.Stdout, r.Stderr)
		}
	}
}
