package auditcmd_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
)

// TestVerifierKeyFileHoldsSeveralKeys: a --verifier-key file may hold
// several keys, one a line, as lockledger-verify.service's members.vkey
// does across a replacement of the group's key (the old key vouches for
// the checkpoints signed before, the new for those after), and as the
// set-up's trust export line writes it where the trust store pins the
// root with both. Such a file was refused, "not a verifier key", and the
// unit failed on every run.
func TestVerifierKeyFileHoldsSeveralKeys(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	clitest.Must(t, 0, root, "run", "deploy", "--", "true")
	export := filepath.Join(t.TempDir(), "audit.jsonl")
	clitest.Must(t, 0, root, "export", "-o", export)
	dir := t.TempDir()
	own := strings.TrimSpace(clitest.Must(t, 0, root, "trust", "show", "--jq", ".verifier_key").Stdout)
	other := strings.TrimSpace(clitest.Must(t, 0, root, "keygen", "--name", "other", "-o", filepath.Join(dir, "other.key")).Stdout)
	write := func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	both := write("members.vkey", "# the group's keys, the replaced one first\n"+other+"\n\n"+own+"\n")
	if r := clitest.Run(t, root, "verify", "--file", export, "--verifier-key", both); r.Code != 0 || !strings.HasPrefix(r.Stdout, "verify: OK") {
		t.Errorf("verify with a file of two keys, one the ledger's: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	// The other key alone vouches for nothing: each line is a key of its
	// own, not a key the file's lines make together.
	if r := clitest.Run(t, root, "verify", "--file", export, "--verifier-key", write("other.vkey", other+"\n# "+own+"\n")); r.Code != 1 {
		t.Errorf("verify with a file whose one key is not the ledger's: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	for name, tc := range map[string]struct{ text, want string }{
		"bad.vkey":   {own + "\nnot-a-key\n", `--verifier-key "` + filepath.Join(dir, "bad.vkey") + `": line 2: not a verifier key`},
		"empty.vkey": {"# none yet\n\n", `--verifier-key "` + filepath.Join(dir, "empty.vkey") + `": holds no key`},
	} {
		r := clitest.Run(t, root, "verify", "--file", export, "--verifier-key", write(name, tc.text))
		if r.Code != 2 || !strings.Contains(r.Stderr, tc.want) {
			t.Errorf("verify --verifier-key %s: exit %d, stderr %q; want exit 2 and %q", name, r.Code, r.Stderr, tc.want)
		}
	}
}
