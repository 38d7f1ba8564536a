package auditcmd_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
)

// TestVerifyFileTrustsTheExportsRegisteredSigners: an export of a
// fleet's ledger, checked offline with the owner's key alone, trusts the
// keys the export's own signer events register (signed by that owner),
// as plain verify trusts the ledger's: host B, which the owner
// registered, signed the last checkpoint. Host C, which the owner did
// not register, signs one by hand that alone covers the tail of a later
// export: with the owner's key that export fails.
func TestVerifyFileTrustsTheExportsRegisteredSigners(t *testing.T) {
	root := t.TempDir()
	dir := t.TempDir()
	a := fleetHost{t, root, "host-a", clitest.TrustDir(root)}
	b := fleetHost{t, root, "host-b", filepath.Join(dir, "trust-b")}
	c := fleetHost{t, root, "host-c", filepath.Join(dir, "trust-c")}
	as := func(h fleetHost, want int, args ...string) clitest.Result { t.Helper(); return h.run(want, args...) }
	key := func(h fleetHost) (string, string) { t.Helper(); return h.key() }
	as(a, 0, "run", "job-a", "--", "true")
	keyA, id := key(a)
	as(b, 0, "run", "job-b", "--", "true")
	keyB, _ := key(b)
	as(a, 0, "signer", "add", keyB, "--role", "host")
	as(b, 0, "trust", "pin", "--ledger-id", id, "--verifier-key", keyA)
	// C pins the owner's key before its first write, as a host joining a
	// fleet does: it appends, storing no checkpoint.
	as(c, 0, "trust", "pin", "--ledger-id", id, "--verifier-key", keyA)
	as(c, 0, "run", "job-c", "--", "true")
	as(b, 0, "run", "last-of-b", "--", "true") // stores the last checkpoint, B's
	signedBy := func(what string) string {
		t.Helper()
		names := clitest.Strings(t, root, `SELECT key_name FROM checkpoints ORDER BY size DESC, id DESC LIMIT 1`)
		if len(names) == 0 {
			t.Fatalf("%s: no checkpoint", what)
		}
		return names[0]
	}
	if got, want := signedBy("after B's write"), keyName(keyB); got != want {
		t.Fatalf("the last checkpoint is signed by %s, want B (%s)", got, want)
	}
	file := filepath.Join(dir, "fleet.jsonl")
	as(a, 0, "export", "-o", file)
	v := clitest.Verify(t, 0, root, "--file", file, "--verifier-key", keyA)
	if !v.OK || v.Trust == "" {
		t.Fatalf("verify --file with the owner's key: %+v", v)
	}
	matched := false
	for _, cp := range v.Checkpoints {
		matched = matched || cp.Key == keyName(keyB) && cp.Result == "matches"
	}
	if !matched {
		t.Errorf("B's checkpoint was not checked with the key the export registers: %+v", v.Checkpoints)
	}

	// C appends, and then signs the only checkpoint covering its events.
	as(c, 0, "run", "by-c", "--", "true")
	if got := signedBy("after C's write"); strings.HasPrefix(got, c.id+"@") {
		t.Fatalf("C, which the owner did not register, stored a checkpoint")
	}
	as(c, 0, "checkpoint")
	if got := signedBy("after C's checkpoint"); !strings.HasPrefix(got, c.id+"@") {
		t.Fatalf("the last checkpoint is signed by %s, want C's key", got)
	}
	tail := filepath.Join(dir, "tail.jsonl")
	as(a, 0, "export", "-o", tail)
	v = clitest.Verify(t, 1, root, "--file", tail, "--verifier-key", keyA)
	if v.OK || v.FirstBad == nil || v.FirstBad.Kind != "checkpoint" {
		t.Fatalf("an export whose tail only an unregistered host's checkpoint covers: %+v", v)
	}
}

// keyName is a verifier key's name.
func keyName(vkey string) string { name, _, _ := strings.Cut(vkey, "+"); return name }

// TestSignerListShowsTheSetThePinnedOwnerMade: mallory, who can write to
// the ledger with a key of her own, registers herself first; the owner's
// `signer list --keys` (the file an auditor is given for --signers)
// names the keys the owner's pinned key vouches for, not the first
// event's claim.
func TestSignerListShowsTheSetThePinnedOwnerMade(t *testing.T) {
	root := t.TempDir()
	dir := t.TempDir()
	a := fleetHost{t, root, "host-a", clitest.TrustDir(root)}
	b := fleetHost{t, root, "host-b", filepath.Join(dir, "trust-b")}
	m := fleetHost{t, root, "mallory", filepath.Join(dir, "trust-m")}
	as := func(h fleetHost, want int, args ...string) clitest.Result { t.Helper(); return h.run(want, args...) }
	key := func(h fleetHost) string { t.Helper(); k, _ := h.key(); return k }
	as(a, 0, "run", "job-a", "--", "true")
	as(m, 0, "run", "job-m", "--", "true")
	as(b, 0, "run", "job-b", "--", "true")
	keyA, keyB, keyM := key(a), key(b), key(m)
	as(m, 0, "signer", "add", keyM, "--role", "host")
	as(a, 0, "signer", "add", keyB, "--role", "host")
	got := strings.Fields(as(a, 0, "signer", "list", "--keys").Stdout)
	want := []string{keyA, keyB}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("signer list --keys = %q, want the owner's set %q (mallory's key %s)", got, want, keyM)
	}
}

// fleetHost is one host of a fleet sharing root: its own host id, user
// and trust store.
type fleetHost struct {
	t            *testing.T
	root         string
	id, trustDir string
}

// run runs lockledger as the host and fails the test unless it exits want.
func (h fleetHost) run(want int, args ...string) clitest.Result {
	h.t.Helper()
	r := clitest.RunWith(h.t, h.root, []string{"LOCKLEDGER_TRUST_DIR=" + h.trustDir, "LOCKLEDGER_HOST_ID=" + h.id, "USER=" + h.id}, "", args...)
	if r.Code != want {
		h.t.Fatalf("%s: lockledger %s: exit %d, want %d\n%s%s", h.id, strings.Join(args, " "), r.Code, want, r.Stdout, r.Stderr)
	}
	return r
}

// key is the host's verifier key and the ledger id its trust store pins.
func (h fleetHost) key() (string, string) {
	h.t.Helper()
	var shown struct {
		VerifierKey string `json:"verifier_key"`
		Pins        []struct {
			LedgerID string `json:"ledger_id"`
		} `json:"pins"`
	}
	if err := json.Unmarshal([]byte(h.run(0, "trust", "show", "--json").Stdout), &shown); err != nil || len(shown.Pins) == 0 {
		h.t.Fatalf("%s: trust show: %v %+v", h.id, err, shown)
	}
	return shown.VerifierKey, shown.Pins[0].LedgerID
}
