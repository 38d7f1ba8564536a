package e2e

// Laundering: someone who can write ROOT but cannot read the key rewrites
// the log, removes the rows that would give it away, and waits for the
// honest signer to vouch for the result. The signer proves that the tree
// extends the last checkpoint its witness holds before it signs anything.

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/pgtest"
)

// checkpointRows is the number of rows in root's checkpoints table.
func checkpointRows(t *testing.T, root string) int {
	t.Helper()
	var n int
	if err := clitest.DB(t, root).QueryRow(`SELECT count(*) FROM checkpoints`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// mustRefuseToSign runs a signed writer's command and fails unless it
// exits 1 saying what it found, with nothing appended, stored or witnessed.
func mustRefuseToSign(t *testing.T, s *signedRoot, args ...string) {
	t.Helper()
	before, rows, witnessed := snapLedger(t, s.root), checkpointRows(t, s.root), readFile(t, s.witness)
	r := clitest.Run(t, s.root, s.signed(args...)...)
	if r.Code != 1 || !strings.Contains(r.Stderr, "refusing to sign") || !strings.Contains(r.Stderr, "checkpoint of 9 events it signed") ||
		!strings.Contains(r.Stderr, s.witness) {
		t.Fatalf("lockledger %s on a laundered log: exit %d, want 1 refusing to sign against the witness's checkpoint of 9 events\nstdout: %s\nstderr: %s",
			strings.Join(args, " "), r.Code, r.Stdout, r.Stderr)
	}
	if after := snapLedger(t, s.root); after.events != before.events || after.head != before.head {
		t.Fatalf("a refused write changed the log: %s, was %s", after, before)
	}
	if n := checkpointRows(t, s.root); n != rows {
		t.Fatalf("a refused write stored %d checkpoint rows, want %d", n, rows)
	}
	if readFile(t, s.witness) != witnessed {
		t.Fatalf("a refused write changed the witness: sizes %v", witnessSizes(t, s.witness))
	}
}

// TestSignerRefusesACutTailLaunderedByProject: the tail cut with its
// Merkle rows, the checkpoint rows and the locks rows that would show it,
// then project; the next honest signed write, and checkpoint, refuse.
func TestSignerRefusesACutTailLaunderedByProject(t *testing.T) {
	t.Parallel()
	s := newSignedRoot(t)
	a := attack(t, s.root)
	a.exec(t, `DELETE FROM events WHERE seq > 6`)
	a.exec(t, `DELETE FROM tlog_hashes WHERE seq > 6`)
	a.exec(t, `DELETE FROM checkpoints`)
	a.exec(t, `DELETE FROM locks WHERE lock_name IN ('app', 'cache')`)
	a.exec(t, `DELETE FROM lock_holders WHERE lock_name IN ('app', 'cache')`)
	a.restore(t)
	for _, f := range []string{"app.lock", "cache.lock"} {
		if err := os.Remove(s.root + "/locks/" + f); err != nil {
			t.Fatal(err)
		}
	}
	clitest.Must(t, 0, s.root, "project")
	pid := strconv.Itoa(os.Getpid())
	mustRefuseToSign(t, s, "acquire", "next", "--actor", "frank", "--pid", pid)
	mustRefuseToSign(t, s, "checkpoint")
	// Without the key nothing is signed, so nothing is refused; verify
	// with the witness names the cut.
	clitest.Must(t, 0, s.root, "acquire", "unsigned", "--pid", pid)
	mustName(t, clitest.Verify(t, 1, s.root, "--verifier-key", s.vkey, "--witness", s.witness), 6, "size 9, key ops", "no longer matches")
}

// TestSignerRefusesARechainedLog: the whole log re-chained with an actor
// renamed, every hash recomputed and the checkpoint rows gone, then
// project: the signer will not vouch for it.
func TestSignerRefusesARechainedLog(t *testing.T) {
	t.Parallel()
	s := newSignedRoot(t)
	a := attack(t, s.root)
	a.rechain(t, func(bs []body) []body { bs[4]["actor"] = "mallory"; return bs })
	a.restore(t)
	clitest.Must(t, 0, s.root, "project", "--accept-broken-chain")
	mustRefuseToSign(t, s, "acquire", "next", "--actor", "frank", "--pid", strconv.Itoa(os.Getpid()))
	mustRefuseToSign(t, s, "checkpoint")
}

// TestImportRefusesALogThatDoesNotExtendTheWitness: a forged SQLite
// ledger (re-chained, an actor renamed) moved into PostgreSQL by an importer with
// the key is refused, nothing copied; the untouched ledger imports.
func TestImportRefusesALogThatDoesNotExtendTheWitness(t *testing.T) {
	t.Parallel()
	s := newSignedRoot(t)
	forged := s.clone(t)
	a := attack(t, forged.root)
	a.rechain(t, func(bs []body) []body { bs[4]["actor"] = "mallory"; return bs })
	a.restore(t)
	url := pgtest.NewDatabase(t)
	env := []string{"LOCKLEDGER_DATABASE_URL=" + url}
	// The forged source does not verify (its locks table shows the edit);
	// accepting that damage must not get it past the witness.
	r := clitest.RunWith(t, forged.root, env, "", s.signed("import", "--from", forged.root, "--accept-broken-chain")...)
	if r.Code != 1 || !strings.Contains(r.Stderr, "refusing to sign") || !strings.Contains(r.Stderr, s.witness) {
		t.Fatalf("import of a forged ledger with the key: exit %d, want 1 refusing it against the witness\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
	}
	var n int
	if err := pgtest.Open(t, url).QueryRow(`SELECT count(*) FROM events`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("a refused import copied %d events", n)
	}
	r = clitest.RunWith(t, s.root, env, "", s.signed("import", "--from", s.root)...)
	if r.Code != 0 {
		t.Fatalf("import of the untouched ledger: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if got := fmt.Sprint(witnessSizes(t, s.witness)); got != "[1 5 9]" {
		t.Fatalf("witness after the imports: %s", got)
	}
}
