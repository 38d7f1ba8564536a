package auditcmd_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
)

// TestVerifyWithTheWrongKeyDoesNotCallTheLedgerUnsigned: an export whose
// checkpoints are all signed by a key the auditor was not given fails
// (exit 1, each checkpoint not vouched for), and verify says so of the
// key: it said "this ledger is unsigned ... write without --unsigned",
// advice for the writer of an unsigned ledger, to an auditor holding the
// wrong key of a signed one.
func TestVerifyWithTheWrongKeyDoesNotCallTheLedgerUnsigned(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	clitest.Must(t, 0, root, "run", "deploy", "--", "true")
	export := filepath.Join(t.TempDir(), "audit.jsonl")
	clitest.Must(t, 0, root, "export", "-o", export)
	wrong := strings.TrimSpace(clitest.Must(t, 0, root, "keygen", "--name", "other", "-o", filepath.Join(t.TempDir(), "other.key")).Stdout)

	r := clitest.Run(t, root, "verify", "--file", export, "--verifier-key", wrong)
	if r.Code != 1 || strings.Contains(r.Stderr, "unsigned") || !strings.Contains(r.Stderr, "warning: no checkpoint verifies with the keys given with --verifier-key") {
		t.Errorf("verify --file with the wrong key: exit %d, stderr %q", r.Code, r.Stderr)
	}
	if !strings.Contains(r.Stdout, "signed       not vouched for: none of the ") || !strings.Contains(r.Stdout, "is not vouched for: signed by ") {
		t.Errorf("verify --file with the wrong key:\n%s", r.Stdout)
	}
	var rep struct {
		Trust   string `json:"trust"`
		Warning string `json:"warning"`
	}
	j := clitest.Run(t, root, "verify", "--file", export, "--verifier-key", wrong, "--json")
	if err := json.Unmarshal([]byte(j.Stdout), &rep); err != nil || j.Code != 1 ||
		!strings.HasPrefix(rep.Trust, "not vouched for") || !strings.HasPrefix(rep.Warning, "no checkpoint verifies") {
		t.Errorf("verify --json with the wrong key: exit %d, %+v (%v)\n%s", j.Code, rep, err, j.Stdout)
	}

	// With no key at all the export's checkpoints are unchecked, as before.
	if r := clitest.Run(t, root, "verify", "--file", export); r.Code != 0 || !strings.Contains(r.Stderr, "signatures were not checked") {
		t.Errorf("verify --file with no key: exit %d, stderr %q", r.Code, r.Stderr)
	}
}
