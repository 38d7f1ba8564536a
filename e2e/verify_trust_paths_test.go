package e2e

// What verify checks a ledger against must lie outside its root, as the
// writers' key and witnesses must: whoever can rewrite the ledger could
// replace a verifier key or a witness kept beside it.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
)

func TestVerifyRefusesAKeyOrWitnessInsideTheRoot(t *testing.T) {
	t.Parallel()
	s := newSignedRoot(t)
	vfile := filepath.Join(s.root, "ops.vkey")
	if err := os.WriteFile(vfile, []byte(s.vkey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	inRoot := filepath.Join(s.root, "locks", "ledger.checkpoints")
	copyFile(t, s.witness, inRoot)
	outside := filepath.Join(t.TempDir(), "ops.vkey")
	if err := os.WriteFile(outside, []byte(s.vkey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := clitest.EventCount(t, s.root)
	for _, c := range []struct {
		flag string
		args []string
	}{
		{"--verifier-key", []string{"verify", "--verifier-key", vfile, "--witness", s.witness}},
		{"--verifier-key", []string{"verify", "--verifier-key", "./ops.vkey", "--witness", s.witness, "--root", "."}},
		{"--witness", []string{"verify", "--verifier-key", s.vkey, "--witness", inRoot}},
		{"--witness", []string{"verify", "--verifier-key", outside, "--witness", filepath.Join(s.root, "locks")}},
	} {
		// Relative paths are taken from the working directory: the root's.
		cmd := clitest.Command(t.Context(), s.root, c.args...)
		cmd.Dir = s.root
		r := clitest.Exec(t, cmd)
		if r.Code != 2 || !strings.Contains(r.Stderr, c.flag) || !strings.Contains(r.Stderr, "inside the root") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming %s and the rule", c.args, r.Code, r.Stderr, c.flag)
		}
	}
	if got := clitest.EventCount(t, s.root); got != n {
		t.Fatalf("the refused verifies recorded events: %d, were %d", got, n)
	}
	// The same key and witness kept outside the root are taken.
	clitest.Verify(t, 0, s.root, "--verifier-key", outside, "--witness", s.witness)
}

// An export that carries signed checkpoints, verified without a key, is
// "not checked", never "unsigned"; with the writer's key it matches.
func TestVerifyFileOfASignedExportWithoutAKeySaysNotChecked(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	clitest.Must(t, 0, root, "acquire", "a", "-q")
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	clitest.Must(t, 0, root, "export", "-o", file)
	v := clitest.Verify(t, 0, root, "--file", file)
	if v.Trust == "unsigned: truncation and re-chaining are not detectable" || !strings.HasPrefix(v.Trust, "not checked: the export carries 1 signed checkpoints") ||
		!strings.Contains(v.Warning, "--verifier-key") || strings.Contains(v.Warning, "unsigned") {
		t.Errorf("verify --file of a signed export without a key:\ntrust: %s\nwarning: %s", v.Trust, v.Warning)
	}
	var show struct {
		VerifierKey string `json:"verifier_key"`
	}
	if err := json.Unmarshal([]byte(clitest.Must(t, 0, root, "trust", "show", "--json").Stdout), &show); err != nil {
		t.Fatal(err)
	}
	if v := clitest.Verify(t, 0, root, "--file", file, "--verifier-key", show.VerifierKey); !strings.HasPrefix(v.Trust, "seq 1-1 match checkpoint") || v.Warning != "" {
		t.Errorf("verify --file with the writer's key:\ntrust: %s\nwarning: %s", v.Trust, v.Warning)
	}
}
