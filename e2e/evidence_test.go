package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	cp "github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/store"
)

// TestEvidenceBundleOfAPeriod: evidence writes the bundle of seq 5-7 (the
// steal among them); verify --evidence accepts it, reports the steal with
// its reason and actor, and appends nothing; the bundle without the steal
// fails.
func TestEvidenceBundleOfAPeriod(t *testing.T) {
	t.Parallel()
	s := newSignedRoot(t)
	at := func(seq int64) string {
		return clitest.Strings(t, s.root, "SELECT at FROM events WHERE seq = "+strconv.FormatInt(seq, 10))[0]
	}
	bundle := filepath.Join(t.TempDir(), "q1.evidence.jsonl")
	clitest.Must(t, 0, s.root, s.signed("evidence", "--since", at(5), "--until", at(7), "-o", bundle)...)
	n := clitest.EventCount(t, s.root)
	out := clitest.Must(t, 0, s.root, "verify", "--evidence", bundle, "--verifier-key", s.vkey).Stdout
	for _, want := range []string{"evidence: OK", "seq 5-7, 3 events", "checkpoint of 1 events", "checkpoint of 9 events",
		"no two exclusive holdings of a lock overlapped", "steal    seq 5", "forced_active", "by carol@"} {
		if !strings.Contains(out, want) {
			t.Errorf("verify --evidence says no %q:\n%s", want, out)
		}
	}
	if got := clitest.EventCount(t, s.root); got != n {
		t.Errorf("verify --evidence appended %d events", got-n)
	}
	var kept []string
	for _, l := range strings.Split(readFile(t, bundle), "\n") {
		if !strings.Contains(l, `"type":"lock_stolen"`) {
			kept = append(kept, l)
		}
	}
	writeFile(t, bundle, strings.Join(kept, "\n"))
	out = clitest.Must(t, 1, s.root, "verify", "--evidence", bundle, "--verifier-key", s.vkey).Stdout
	if !strings.Contains(out, "evidence: FAILED") {
		t.Errorf("the bundle without its steal:\n%s", out)
	}
	// A FIFO where the bundle should be is bad input at once: an open of
	// it would block where no signal ends it.
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := clitest.Must(t, 2, s.root, "verify", "--evidence", fifo, "--verifier-key", s.vkey); !strings.Contains(r.Stderr, "--evidence") || !strings.Contains(r.Stderr, "regular file") {
		t.Errorf("a FIFO at --evidence:\n%s", r.Stderr)
	}
}

// TestEvidenceOfALargeLedger: the bundle of a period in the middle of a
// 100k-event ledger, checked by verify --evidence and by the Python
// verifier. Run with LOCKLEDGER_STRESS=1 (make stress).
func TestEvidenceOfALargeLedger(t *testing.T) {
	t.Parallel()
	if !stressed() {
		t.Skip("LOCKLEDGER_STRESS=1 runs the 100k-event bundle")
	}
	const n = 100_000
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "root")
	clitest.Unsigned(t, root)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, _, err := (fixture.Ledger{Events: n, Locks: 200, Start: start, Span: 90 * 24 * time.Hour}).Write(root); err != nil {
		t.Fatal(err)
	}
	sk, vk, err := cp.GenerateKey("ops")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := cp.NewSigner(sk)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(ctx, root, ledger.MustExist(), ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	// The writers' checkpoints, every 1000 events, each signed just
	// after the event of its size.
	db := pgtest.Open(t, l.Source())
	for size := int64(1000); size <= n; size += 1000 {
		var at string
		if err := db.QueryRow(`SELECT at FROM events WHERE seq = ?`, size).Scan(&at); err != nil {
			t.Fatal(err)
		}
		tm, _ := events.ParseTime(at)
		root, err := cp.TreeFrom(size, store.TreeReader(ctx, db))
		if err != nil {
			t.Fatal(err)
		}
		h, _ := root.Root()
		c := cp.Checkpoint{Origin: cp.Origin(l.ID()), Size: size, Root: h, Time: tm.Add(time.Millisecond)}
		msg, err := cp.Sign(c, signer)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.InsertCheckpoint(ctx, db, size, h.String(), string(msg), "ops", events.FormatTime(c.Time)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	since, until := start.Add(30*24*time.Hour), start.Add(60*24*time.Hour)
	bundle := filepath.Join(t.TempDir(), "q.evidence.jsonl")
	began := time.Now()
	clitest.Must(t, 0, root, "evidence", "--since", since.Format(time.RFC3339), "--until", until.Format(time.RFC3339), "-o", bundle)
	t.Logf("evidence: %v", time.Since(began))
	began = time.Now()
	out := clitest.Must(t, 0, root, "verify", "--evidence", bundle, "--verifier-key", vk).Stdout
	t.Logf("verify --evidence: %v", time.Since(began))
	if !strings.Contains(out, "evidence: OK") {
		t.Fatalf("%s", out)
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	began = time.Now()
	if b, err := exec.Command(py, "../evidence/testdata/verify_evidence.py", "--verifier-key", vk, bundle).CombinedOutput(); err != nil {
		t.Fatalf("the Python verifier: %v\n%s", err, b)
	}
	t.Logf("verify_evidence.py: %v", time.Since(began))
	fi, _ := os.Stat(bundle)
	t.Logf("bundle: %d bytes", fi.Size())
}

// TestVerifyEvidenceChecksWitnessCosignatures: a tlog witness cosigned the
// end checkpoint; verify --evidence --witness-key names it, and fails with
// a witness key that cosigned nothing (the quorum of verify's
// --witness-key, all keys by default).
func TestVerifyEvidenceChecksWitnessCosignatures(t *testing.T) {
	t.Parallel()
	w, s := newCosignedRoot(t)
	at := func(seq int64) string {
		return clitest.Strings(t, s.root, "SELECT at FROM events WHERE seq = "+strconv.FormatInt(seq, 10))[0]
	}
	bundle := filepath.Join(t.TempDir(), "q1.evidence.jsonl")
	clitest.Must(t, 0, s.root, s.signed("evidence", "--since", at(5), "--until", at(7), "-o", bundle)...)
	out := clitest.Must(t, 0, s.root, "verify", "--evidence", bundle, "--verifier-key", s.vkey, "--witness-key", w.vkey).Stdout
	if !strings.Contains(out, "evidence: OK") || !strings.Contains(out, "cosigned   example.com/lockledger-test") {
		t.Errorf("verify --evidence --witness-key does not name the witness that cosigned:\n%s", out)
	}
	out = clitest.Must(t, 1, s.root, "verify", "--evidence", bundle, "--verifier-key", s.vkey, "--witness-key", otherWitnessKey(t)).Stdout
	if !strings.Contains(out, "evidence: FAILED") || !strings.Contains(out, "no cosignature by the witness keys given") {
		t.Errorf("verify --evidence with a witness key that cosigned nothing:\n%s", out)
	}
}
