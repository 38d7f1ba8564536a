package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/formats"
	"github.com/lockledger/lockledger/internal/clitest"
)

// BSO calls a corrupt .sprint-running a zombie and takes it over.
// lockledger refuses it without --force (it is no lock, and someone's
// bytes); with --force it keeps the file aside beside it, records where,
// and takes the lock.
func TestACorruptBSOLockIsKeptAsideAndTakenOverWithForce(t *testing.T) {
	t.Parallel()
	root, dir := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, ".sprint-running")
	corrupt := []byte("pid: {{{\nstarted_at: never\n")
	if err := os.WriteFile(path, corrupt, 0o644); err != nil {
		t.Fatal(err)
	}
	self := strconv.Itoa(os.Getpid())
	target := "bso:" + path
	if st := bsoCheck(t, root, path); st.Status != formats.BSOStatusZombieDetected {
		t.Fatalf("BSO's check of a corrupt lock: %+v", st)
	}

	r := clitest.Must(t, 2, root, "acquire", "sprint", "--file", target, "--request-id", "sprint-1", "--pid", self)
	if !strings.Contains(r.Stderr, "--force") {
		t.Fatalf("the refusal must say --force takes it: %s", r.Stderr)
	}
	if got, _ := os.ReadFile(path); string(got) != string(corrupt) {
		t.Fatalf("a refused acquire changed the file: %q", got)
	}
	if asides, _ := filepath.Glob(path + ".corrupt-*"); len(asides) != 0 {
		t.Fatalf("a refused acquire kept something aside: %v", asides)
	}

	r = clitest.Must(t, 0, root, "acquire", "sprint", "--file", target, "--request-id", "sprint-1", "--pid", self, "--force")
	asides, _ := filepath.Glob(path + ".corrupt-*")
	if len(asides) != 1 {
		t.Fatalf("kept aside: %v, want one file", asides)
	}
	aside := asides[0]
	if got, _ := os.ReadFile(aside); string(got) != string(corrupt) {
		t.Fatalf("the file kept aside holds %q, want the old bytes", got)
	}
	if !strings.Contains(r.Stderr, aside) {
		t.Fatalf("acquire must print where the file was kept: %s", r.Stderr)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if h, err := formats.BSO.Parse(got); err != nil || h.RequestID != "sprint-1" {
		t.Fatalf("the bso file after the forced acquire: %v\n%s", err, got)
	}
	stolen := lastBody(t, root, "lock_stolen")
	sum := sha256.Sum256(corrupt)
	if note, _ := stolen["note"].(string); !strings.Contains(note, aside) || stolen["previous_lock_hash"] != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Fatalf("lock_stolen must name the aside path and hash the old bytes: %v", stolen)
	}
	if st := bsoCheck(t, root, path); st.Status != formats.BSOStatusBlocked {
		t.Fatalf("BSO's check after the take-over: %+v", st)
	}
	if v := clitest.Verify(t, 0, root); !v.OK {
		t.Fatalf("verify: %+v", v)
	}
	clitest.Must(t, 0, root, "release", "sprint", "--request-id", "sprint-1")
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("release left the bso file: %v", err)
	}
	if got, _ := os.ReadFile(aside); string(got) != string(corrupt) {
		t.Fatalf("release touched the file kept aside: %q", got)
	}
	assertChain(t, root)
}

// A format whose own tool fails safe on an unreadable file (beads skips
// the database, Prodigy refuses to resume) keeps refusing it, --force or not.
func TestAnUnreadableLockOfAFailSafeFormatIsRefusedEvenWithForce(t *testing.T) {
	t.Parallel()
	for _, format := range []string{formats.NameBeads, formats.NameProdigy, formats.NameTowerFleet} {
		t.Run(format, func(t *testing.T) {
			root, dir := t.TempDir(), t.TempDir()
			path := filepath.Join(dir, "x.lock")
			corrupt := []byte(`{"holder": "x", "pid": `)
			if err := os.WriteFile(path, corrupt, 0o600); err != nil {
				t.Fatal(err)
			}
			clitest.Must(t, 2, root, "acquire", "j", "--file", format+":"+path, "--pid", strconv.Itoa(os.Getpid()), "--force")
			if got, _ := os.ReadFile(path); string(got) != string(corrupt) {
				t.Fatalf("a refused acquire changed the file: %q", got)
			}
			if asides, _ := filepath.Glob(path + ".corrupt-*"); len(asides) != 0 {
				t.Fatalf("a refused acquire kept something aside: %v", asides)
			}
		})
	}
}

// GitClaw removes a corrupt lock as it does an expired one: the same
// rule as BSO's zombie, with GitClaw's file.
func TestACorruptGitClawLockIsKeptAsideAndTakenOverWithForce(t *testing.T) {
	t.Parallel()
	root, dir := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "state", "locks", "7.lock")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	corrupt := []byte(`{"issueNumber": 7, "runId": "r1", "acquiredAt": "not a date"`)
	if err := os.WriteFile(path, corrupt, 0o600); err != nil {
		t.Fatal(err)
	}
	self := strconv.Itoa(os.Getpid())
	target := formats.NameGitClaw + ":" + path
	clitest.Must(t, 2, root, "acquire", "7", "--file", target, "--pid", self)
	clitest.Must(t, 0, root, "acquire", "7", "--file", target, "--pid", self, "--force")
	asides, _ := filepath.Glob(path + ".corrupt-*")
	if len(asides) != 1 {
		t.Fatalf("kept aside: %v, want one file", asides)
	}
	if got, _ := os.ReadFile(asides[0]); string(got) != string(corrupt) {
		t.Fatalf("the file kept aside holds %q, want the old bytes", got)
	}
	if note, _ := lastBody(t, root, "lock_stolen")["note"].(string); !strings.Contains(note, asides[0]) {
		t.Fatalf("lock_stolen note %q does not name %s", note, asides[0])
	}
	if v := clitest.Verify(t, 0, root); !v.OK {
		t.Fatalf("verify: %+v", v)
	}
}
