package e2e

// verify --file is exact: a head the auditor brings (--checkpoint,
// --expect-head) must be reached, a slice proves that its events are
// those positions of the signed log and says nothing more, and the check
// writes nothing anywhere.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	ckpt "github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/internal/clitest"
)

// signedHead runs one more signed write and signs the head of the whole
// log into a file outside the root, as an operator hands it to an auditor.
func signedHead(t *testing.T, s *signedRoot) (path string, size int64) {
	t.Helper()
	clitest.Must(t, 0, s.root, s.signed("heartbeat", "cache", "--request-id", "e1")...)
	path = filepath.Join(t.TempDir(), "head.checkpoint")
	writeFile(t, path, clitest.Must(t, 0, s.root, "checkpoint", "--signing-key", s.key).Stdout)
	lines := strings.Split(readFile(t, path), "\n")
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		t.Fatalf("head.checkpoint: %v\n%s", err, readFile(t, path))
	}
	return path, size
}

func eventHash(t *testing.T, root string, seq int64) string {
	t.Helper()
	return clitest.Strings(t, root, "SELECT hash FROM events WHERE seq = "+strconv.FormatInt(seq, 10))[0]
}

// TestAnExportCutShortOfTheAuditorsHeadFails: the tail of an export cut,
// with the checkpoint line that covered it, fails against the head the
// auditor brought, naming the missing range; uncut, it passes.
func TestAnExportCutShortOfTheAuditorsHeadFails(t *testing.T) {
	t.Parallel()
	s := newSignedRoot(t)
	head, size := signedHead(t, s)
	export := filepath.Join(t.TempDir(), "audit.jsonl")
	clitest.Must(t, 0, s.root, "export", "-o", export)
	v := clitest.Verify(t, 0, s.root, "--file", export, "--verifier-key", s.vkey, "--checkpoint", head)
	if !v.OK || !strings.HasPrefix(v.Trust, "seq 1-"+strconv.FormatInt(size, 10)+" match") {
		t.Fatalf("the whole export against the head: %+v", v)
	}
	var kept []string
	for _, l := range strings.Split(strings.TrimSpace(readFile(t, export)), "\n") {
		if strings.HasPrefix(l, `{"checkpoint"`) && !strings.Contains(l, `\n1\n`) && !strings.Contains(l, `\n5\n`) {
			continue // the checkpoints that covered the cut events
		}
		if strings.HasPrefix(l, `{"seq":`) {
			var e struct{ Seq int64 }
			if err := json.Unmarshal([]byte(l), &e); err != nil {
				t.Fatal(err)
			}
			if e.Seq > 6 {
				continue
			}
		}
		kept = append(kept, l)
	}
	writeFile(t, export, strings.Join(kept, "\n")+"\n")
	v = clitest.Verify(t, 1, s.root, "--file", export, "--verifier-key", s.vkey, "--checkpoint", head)
	mustName(t, v, 7, head, "ends at seq 6", "seq 7-"+strconv.FormatInt(size, 10)+" are missing")
	// A chain head written down earlier is held to the same.
	v = clitest.Verify(t, 1, s.root, "--file", export, "--expect-head", "8:"+eventHash(t, s.root, 8))
	mustName(t, v, 7, "expected head 8:", "ends at seq 6", "seq 7-8 are missing")
}

// TestASliceProvesOnlyThatItsEventsAreInTheSignedLog: a slice between
// checkpoints carries the consistency proof from its end to the ledger's
// later checkpoints: it verifies against them and against the auditor's
// head, saying which seqs it vouches for and that it holds nothing
// before them; a head it does not reach, a wrong tree or a wrong proof
// fails.
func TestASliceProvesOnlyThatItsEventsAreInTheSignedLog(t *testing.T) {
	t.Parallel()
	s := newSignedRoot(t) // checkpoints 1, 5, 9
	head, size := signedHead(t, s)
	at := func(seq int64) string {
		return clitest.Strings(t, s.root, "SELECT at FROM events WHERE seq = "+strconv.FormatInt(seq, 10))[0]
	}
	slice := filepath.Join(t.TempDir(), "slice.jsonl")
	clitest.Must(t, 0, s.root, "export", "--since", at(7), "--until", at(8), "-o", slice)
	text := readFile(t, slice)
	// Without its consistency lines, a slice that ends before the head
	// does not reach it.
	var stripped []string
	for _, l := range strings.Split(text, "\n") {
		if !strings.HasPrefix(l, `{"consistency"`) {
			stripped = append(stripped, l)
		}
	}
	cut := filepath.Join(t.TempDir(), "cut.jsonl")
	writeFile(t, cut, strings.Join(stripped, "\n"))
	mustName(t, clitest.Verify(t, 1, s.root, "--file", cut, "--verifier-key", s.vkey, "--checkpoint", head),
		9, head, "ends at seq 8", "no consistency proof", "seq 9-"+strconv.FormatInt(size, 10)+" are missing")

	if !strings.Contains(text, `{"consistency":{"from":8,"to":`+strconv.FormatInt(size, 10)+`,`) {
		t.Fatalf("the slice carries no consistency proof from its end to the head:\n%s", text)
	}
	want := "seq 7-8 are events 7-8 of the log "
	v := clitest.Verify(t, 0, s.root, "--file", slice, "--verifier-key", s.vkey)
	if !v.OK || !strings.HasPrefix(v.Trust, want) || !strings.Contains(v.Trust, "the events before seq 7 are not in the file") {
		t.Fatalf("the slice on its own: ok %v, trust %q, problems %+v", v.OK, v.Trust, v.Problems)
	}
	v = clitest.Verify(t, 0, s.root, "--file", slice, "--verifier-key", s.vkey, "--checkpoint", head)
	if !v.OK || !strings.HasPrefix(v.Trust, want+"checkpoint "+head) || !strings.Contains(v.Trust, "consistency proof from size 8 to "+strconv.FormatInt(size, 10)) {
		t.Fatalf("the slice against the head: ok %v, trust %q, problems %+v", v.OK, v.Trust, v.Problems)
	}
	// The chain head just before the slice is its first prev_hash.
	clitest.Verify(t, 0, s.root, "--file", slice, "--expect-head", "6:"+eventHash(t, s.root, 6))

	// Heads the slice does not reach.
	mustName(t, clitest.Verify(t, 1, s.root, "--file", slice, "--expect-head", "3:"+eventHash(t, s.root, 3)),
		7, "starts at seq 7", "seq 3-6 are not in it")
	early := filepath.Join(t.TempDir(), "early.checkpoint")
	writeFile(t, early, witnessNote(t, s.witness, 5))
	mustName(t, clitest.Verify(t, 1, s.root, "--file", slice, "--verifier-key", s.vkey, "--checkpoint", early),
		7, "covers seq 1-5", "starts at seq 7")

	// Another tree before the slice, or another proof, reaches no root.
	for name, text := range map[string]string{"tree": retree(t, text), "proof": reproof(t, text)} {
		bad := filepath.Join(t.TempDir(), name+".jsonl")
		writeFile(t, bad, text)
		mustName(t, clitest.Verify(t, 1, s.root, "--file", bad, "--verifier-key", s.vkey, "--checkpoint", head), 7, "consistency proof")
	}
}

// retree replaces the first hash of an export's tree line by another.
func retree(t *testing.T, text string) string {
	t.Helper()
	return replaceFirstHash(t, text, `{"tree"`, `"frontier":["`)
}

// reproof replaces the first hash of each consistency line by another.
func reproof(t *testing.T, text string) string {
	t.Helper()
	return replaceFirstHash(t, text, `{"consistency"`, `"proof":["`)
}

func replaceFirstHash(t *testing.T, text, linePrefix, key string) string {
	t.Helper()
	lines := strings.Split(text, "\n")
	n := 0
	for i, l := range lines {
		if !strings.HasPrefix(l, linePrefix) {
			continue
		}
		j := strings.Index(l, key)
		if j < 0 {
			t.Fatalf("no %s in %s", key, l)
		}
		j += len(key)
		lines[i] = l[:j] + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=" + l[j+44:]
		n++
	}
	if n == 0 {
		t.Fatalf("no %s line in:\n%s", linePrefix, text)
	}
	return strings.Join(lines, "\n")
}

// witnessNote is the witness's checkpoint of size, as a file holds it.
func witnessNote(t *testing.T, witness string, size int64) string {
	t.Helper()
	for _, e := range ckpt.SplitNotes([]byte(readFile(t, witness))) {
		if c, err := ckpt.Open(e.Note); err == nil && c.Size == size {
			return string(e.Note)
		}
	}
	t.Fatalf("the witness holds no checkpoint of size %d", size)
	return ""
}

// TestVerifyFileWritesNothing: an auditor's verify --file, with
// LOCKLEDGER_ROOT set to a ledger and an empty home, appends nothing to
// that ledger and makes no trust store, key or pin.
func TestVerifyFileWritesNothing(t *testing.T) {
	t.Parallel()
	s := newSignedRoot(t)
	export := filepath.Join(t.TempDir(), "audit.jsonl")
	clitest.Must(t, 0, s.root, "export", "-o", export)
	before := clitest.EventCount(t, s.root)
	home := t.TempDir()
	trustDir := filepath.Join(home, "trust")
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "LOCKLEDGER_TRUST_DIR=" + trustDir, "LOCKLEDGER_UNSIGNED="}
	for _, args := range [][]string{{"verify", "--file", export}, {"verify", "--file", export, "--verifier-key", s.vkey, "--json"}} {
		r := clitest.RunWith(t, s.root, env, "", args...)
		if r.Code != 0 || strings.Contains(r.Stdout+r.Stderr, "recorded") {
			t.Fatalf("%v: exit %d\nstdout: %s\nstderr: %s", args, r.Code, r.Stdout, r.Stderr)
		}
	}
	if n := clitest.EventCount(t, s.root); n != before {
		t.Fatalf("verify --file appended %d events to the ledger at LOCKLEDGER_ROOT", n-before)
	}
	ents, err := os.ReadDir(home)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 0 {
		t.Fatalf("verify --file wrote into the auditor's home: %v", ents)
	}
}

// TestAnAuditorsVerifyOfASignedLedgerMakesNoKey: a user with no pin of
// the root (an auditor) verifies a signed ledger without its key: verify
// says its checkpoints went unchecked (not that the ledger is unsigned),
// and records itself without making a key or pinning the ledger.
func TestAnAuditorsVerifyOfASignedLedgerMakesNoKey(t *testing.T) {
	t.Parallel()
	s := newSignedRoot(t)
	trustDir := filepath.Join(t.TempDir(), "auditor")
	r := clitest.RunWith(t, s.root, []string{"LOCKLEDGER_TRUST_DIR=" + trustDir, "LOCKLEDGER_UNSIGNED="}, "", "verify", "--json")
	v := clitest.DecodeVerify(t, r)
	if r.Code != 0 || !strings.HasPrefix(v.Trust, "not checked: the ledger holds 3 signed checkpoints") || strings.Contains(r.Stderr, "unsigned") {
		t.Fatalf("an auditor's verify: exit %d, trust %q\nstderr: %s", r.Code, v.Trust, r.Stderr)
	}
	for _, f := range []string{"signing.key", "known_ledgers"} {
		if _, err := os.Lstat(filepath.Join(trustDir, f)); !os.IsNotExist(err) {
			t.Errorf("an auditor's verify made %s in its trust store (%v)", f, err)
		}
	}
}
