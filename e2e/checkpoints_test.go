package e2e

// Signed checkpoints and witnesses in the less common places: a checkpoint
// signed by hand, a witness shared by two ledgers or kept as a directory
// or a FIFO nobody reads, a slice of an export, a signer whose clock runs
// ahead, a mistyped signing key, a head given in upper case; checkpoint
// rows written behind the writers' backs.

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	signednote "github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/fixture"
)

// TestHandSignedCheckpointKeepsTheWritersPromise: a checkpoint signed with
// `lockledger checkpoint` carries no promise; events forged after it are
// still held to the promise of the writers' checkpoints before it,
// counted from the newest checkpoint.
func TestHandSignedCheckpointKeepsTheWritersPromise(t *testing.T) {
	t.Parallel()
	s := newSignedRoot(t) // checkpoints 1, 5, 9, every 4
	clitest.Must(t, 0, s.root, s.signed("heartbeat", "app", "--request-id", "d1")...)
	clitest.Must(t, 0, s.root, s.signed("heartbeat", "cache", "--request-id", "e1")...)
	clitest.Must(t, 0, s.root, "checkpoint", "--signing-key", s.key, "--witness", s.witness)
	if got := witnessSizes(t, s.witness); len(got) != 4 || got[3] != 11 {
		t.Fatalf("witness holds checkpoints of sizes %v, want [1 5 9 11]", got)
	}
	cp := witnessTime(t, s.witness, 11)
	a := attack(t, s.root)
	hb := a.bodyOf(t, 10) // dave's heartbeat of app
	var forged []int64
	for i := range 6 {
		m := body{}
		for k, v := range hb {
			m[k] = v
		}
		at := cp.Add(time.Duration(i+1) * time.Second)
		m["event_id"], m["at"] = events.NewULID(at), events.FormatTime(at)
		forged = append(forged, fixture.AppendBody(t, a.db, m))
	}
	a.restore(t)
	v := clitest.Verify(t, 1, s.root, "--verifier-key", s.vkey, "--witness", s.witness)
	// The writers sign within 4 events of the last checkpoint (11): seq 15
	// is the first no writer with the key would have left unsigned.
	if forged[3] != 15 {
		t.Fatalf("forged seqs %v", forged)
	}
	mustName(t, v, 15, "size 9, key ops", "size 11", "without the key")
}

// TestWitnessSharedByTwoLedgers: a witness that keeps the checkpoints of
// two ledgers vouches for each; the other's checkpoints are not checked.
// A database swapped for another ledger's still fails (see the tamper
// corpus): the witness holds none of its checkpoints.
func TestWitnessSharedByTwoLedgers(t *testing.T) {
	t.Parallel()
	s := newSignedRoot(t)
	other := filepath.Join(t.TempDir(), "other")
	clitest.Must(t, 0, other, s.signed("acquire", "web", "--actor", "frank", "--pid", strconv.Itoa(os.Getpid()))...)
	if got := witnessSizes(t, s.witness); len(got) != 4 {
		t.Fatalf("witness holds checkpoints of sizes %v, want the three of one ledger and one of the other", got)
	}
	for _, root := range []string{s.root, other} {
		v := clitest.Verify(t, 0, root, "--verifier-key", s.vkey, "--witness", s.witness)
		others := 0
		for _, c := range v.Checkpoints {
			if c.Result == "not checked" && strings.Contains(c.Detail, "another ledger") {
				others++
			}
		}
		if want := map[string]int{s.root: 1, other: 3}[root]; others != want {
			t.Fatalf("%s: %d checkpoints listed as another ledger's, want %d: %+v", root, others, want, v.Checkpoints)
		}
	}
}

// TestTimeSlicedExportVerifiesAgainstTheWitness: a slice ends where it
// was cut; the witness's later checkpoints are not checked against it,
// and do not call it truncated.
func TestTimeSlicedExportVerifiesAgainstTheWitness(t *testing.T) {
	t.Parallel()
	s := newSignedRoot(t)
	at := func(seq int64) string {
		return clitest.Strings(t, s.root, "SELECT at FROM events WHERE seq = "+strconv.FormatInt(seq, 10))[0]
	}
	slice := filepath.Join(t.TempDir(), "slice.jsonl")
	clitest.Must(t, 0, s.root, "export", "--since", at(5), "--until", at(8), "-o", slice)
	v := clitest.Verify(t, 0, s.root, "--file", slice, "--verifier-key", s.vkey, "--witness", s.witness)
	if !strings.HasPrefix(v.Trust, "seq 5-8 are events 5-8 of the log checkpoint "+s.witness) || !strings.Contains(v.Trust, "consistency proof from size 8 to 9") {
		t.Fatalf("trust %q", v.Trust)
	}
	// A slice cut short of a checkpoint it carries is still truncated.
	lines := strings.Split(strings.TrimSpace(readFile(t, slice)), "\n")
	writeFile(t, slice, strings.Join(lines[:len(lines)-4], "\n")+"\n")
	mustName(t, clitest.Verify(t, 1, s.root, "--file", slice, "--verifier-key", s.vkey, "--witness", s.witness), 5, "truncated")
}

// TestClockSkewWidensTheBackdateCheck: an event dated a little before the
// checkpoint that does not cover it is what a signer whose clock runs
// ahead leaves; --clock-skew says how far that may be.
func TestClockSkewWidensTheBackdateCheck(t *testing.T) {
	t.Parallel()
	s := newSignedRoot(t)
	a := attack(t, s.root)
	forged := fixture.AppendBody(t, a.db, forgedRelease(t, a, witnessTime(t, s.witness, 9).Add(-3*time.Second)))
	a.restore(t)
	mustName(t, clitest.Verify(t, 1, s.root, "--verifier-key", s.vkey, "--witness", s.witness), forged, "dated back")
	v := clitest.Verify(t, 1, s.root, "--verifier-key", s.vkey, "--witness", s.witness, "--clock-skew", "10s")
	for _, p := range v.Problems {
		if strings.Contains(p.Detail, "dated back") {
			t.Fatalf("dated back within --clock-skew: %+v", p)
		}
	}
}

// TestVerifyListsEachCheckpointOnce: the ledger's three checkpoints and
// the witness's three, each listed and counted once.
func TestVerifyListsEachCheckpointOnce(t *testing.T) {
	t.Parallel()
	s := newSignedRoot(t)
	v := clitest.Verify(t, 0, s.root, "--verifier-key", s.vkey, "--witness", s.witness)
	if len(v.Checkpoints) != 6 {
		t.Fatalf("%d checkpoints listed, want 6: %+v", len(v.Checkpoints), v.Checkpoints)
	}
	for _, c := range v.Checkpoints {
		if c.Result != "matches" {
			t.Fatalf("checkpoint %s: result %q", c.Source, c.Result)
		}
	}
}

// TestMistypedSigningKeyIsNeverPrinted: a key in LOCKLEDGER_SIGNING_KEY
// with a stray space is read; one typed wrong is refused without echoing it.
func TestMistypedSigningKeyIsNeverPrinted(t *testing.T) {
	t.Parallel()
	s := newSignedRoot(t)
	key := strings.TrimSpace(readFile(t, s.key))
	run := func(value string) clitest.Result {
		t.Helper()
		return clitest.RunWith(t, s.root, []string{"LOCKLEDGER_SIGNING_KEY=" + value}, "", "checkpoint")
	}
	if r := run(" " + key + "\n"); r.Code != 0 {
		t.Fatalf("key with surrounding space: exit %d: %s", r.Code, r.Stderr)
	}
	secret := strings.TrimPrefix(key, "PRIVATE+KEY+")
	r := run(secret)
	if r.Code != 2 {
		t.Fatalf("key without its prefix: exit %d, want 2: %s", r.Code, r.Stderr)
	}
	for _, part := range strings.Split(secret, "+") {
		if len(part) > 8 && strings.Contains(r.Stdout+r.Stderr, part) {
			t.Fatalf("the key's %q printed:\n%s%s", part, r.Stdout, r.Stderr)
		}
	}
}

// TestProveAgainstAWitnessDirectory: a witness directory keeps one file per
// checkpoint; prove uses its largest of this ledger.
func TestProveAgainstAWitnessDirectory(t *testing.T) {
	t.Parallel()
	s := newSignedRoot(t)
	dir := filepath.Join(t.TempDir(), "witness.d")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	clitest.Must(t, 0, s.root, "checkpoint", "--signing-key", s.key, "--witness", dir)
	other := filepath.Join(t.TempDir(), "other")
	// Another ledger's larger checkpoints in the same directory.
	for i := range 6 {
		id := "r" + strconv.Itoa(i)
		for _, args := range [][]string{{"acquire", "web", "--actor", "frank", "--request-id", id, "--pid", strconv.Itoa(os.Getpid())},
			{"release", "web", "--request-id", id}} {
			clitest.Must(t, 0, other, append([]string{"--signing-key", s.key, "--witness", dir, "--checkpoint-every", "1"}, args...)...)
		}
	}
	p := clitest.Must(t, 0, s.root, "prove", "event", "5", "--checkpoint", dir).Stdout
	f := filepath.Join(t.TempDir(), "proof")
	writeFile(t, f, p)
	clitest.Must(t, 0, s.root, "verify-proof", f, "--verifier-key", s.vkey)
}

// TestExpectHeadInUpperCase: a head copied in upper case is the same head.
func TestExpectHeadInUpperCase(t *testing.T) {
	t.Parallel()
	s := newSignedRoot(t)
	h := clitest.Strings(t, s.root, "SELECT hash FROM events WHERE seq = 9")[0]
	clitest.Verify(t, 0, s.root, "--expect-head", "9:"+strings.ToUpper(h))
}

// TestExportOfOnlyCheckpointLinesIsEmpty: the refusal says what the file
// holds.
func TestExportOfOnlyCheckpointLinesIsEmpty(t *testing.T) {
	t.Parallel()
	s := newSignedRoot(t)
	export := filepath.Join(t.TempDir(), "audit.jsonl")
	clitest.Must(t, 0, s.root, "export", "-o", export)
	var head []string
	for _, l := range strings.Split(readFile(t, export), "\n") {
		if strings.HasPrefix(l, `{"checkpoint"`) || strings.HasPrefix(l, `{"tree"`) {
			head = append(head, l)
		}
	}
	writeFile(t, export, strings.Join(head, "\n")+"\n")
	r := clitest.Must(t, 1, s.root, "verify", "--file", export)
	if !strings.Contains(r.Stdout+r.Stderr, "holds only tree and checkpoint lines") {
		t.Fatalf("verify of checkpoint lines only:\n%s%s", r.Stdout, r.Stderr)
	}
}

// TestAWitnessThatIsAFIFOBlocksNoWriter: a witness nobody reads (a FIFO,
// as a stalled mount would be) neither hangs the writer that signs a
// checkpoint nor, through the writer lock, any other writer: the lock
// is taken, the checkpoint stays in the ledger, and the refusal is said.
func TestAWitnessThatIsAFIFOBlocksNoWriter(t *testing.T) {
	t.Parallel()
	root, dir := t.TempDir(), t.TempDir()
	key, fifo := filepath.Join(dir, "signing.key"), filepath.Join(dir, "witness")
	clitest.Must(t, 0, root, "keygen", "--name", "ops", "-o", key)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	me, _ := sleeper(t)
	r := clitest.Must(t, 0, root, "acquire", "a", "--pid", strconv.Itoa(me), "--signing-key", key, "--witness", fifo, "--checkpoint-every", "1")
	if !strings.Contains(r.Stderr, "witness") {
		t.Fatalf("the refused witness is not said:\n%s", r.Stderr)
	}
	clitest.Must(t, 0, root, "acquire", "b", "--pid", strconv.Itoa(me))
	if n := clitest.Strings(t, root, `SELECT size FROM checkpoints`); len(n) == 0 {
		t.Fatal("the checkpoint was not stored in the ledger")
	}
}

// Checkpoint rows anyone who can write the database can add: a writer
// never takes one its key did not sign as signed, and plain verify (no
// key) reports every row no writer would have stored.

func TestPlainVerifyReportsCheckpointRowsNoWriterStored(t *testing.T) {
	t.Parallel()
	base := newSignedRoot(t) // checkpoints #1, #2, #3 of sizes 1, 5 and 9
	const cols = `(id, size, root, note, key_name, created_at)`
	forgedNote := func(t *testing.T, s *signedRoot) string {
		var msg string
		if err := clitest.DB(t, s.root).QueryRow(`SELECT note FROM checkpoints WHERE id = 2`).Scan(&msg); err != nil {
			t.Fatal(err)
		}
		c, err := signednote.Open([]byte(msg))
		if err != nil {
			t.Fatal(err)
		}
		sk, _, err := signednote.GenerateKey("ops")
		if err != nil {
			t.Fatal(err)
		}
		signer, err := signednote.NewSigner(sk)
		if err != nil {
			t.Fatal(err)
		}
		c.Root = tlog.Hash{1}
		b, err := signednote.Sign(c.Checkpoint, signer)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, c := range []struct {
		name  string
		query func(t *testing.T, s *signedRoot) string
		words []string
		keyed bool // verify with the key names it too
	}{
		{"a garbage row within the log", func(*testing.T, *signedRoot) string {
			return `INSERT INTO checkpoints (size, root, note, key_name, created_at) VALUES (3, 'x', 'garbage', 'ops', '2026-01-01T00:00:00Z')`
		}, []string{"ledger checkpoint #4 (size 3)", "not a signed checkpoint"}, false},
		{"a garbage row claiming a huge tree", func(*testing.T, *signedRoot) string {
			return `INSERT INTO checkpoints (size, root, note, key_name, created_at) VALUES (1000000000000, 'x', 'garbage', 'ops', '2026-01-01T00:00:00Z')`
		}, []string{"ledger checkpoint #4 (size 1000000000000)", "not a signed checkpoint"}, false},
		{"checkpoint 2 replaced by garbage", func(*testing.T, *signedRoot) string {
			return `INSERT OR REPLACE INTO checkpoints ` + cols + ` SELECT id, size, root, 'garbage', key_name, created_at FROM checkpoints WHERE id = 2`
		}, []string{"ledger checkpoint #2", "not a signed checkpoint"}, false},
		{"checkpoint 2 replaced by its note without the signature", func(*testing.T, *signedRoot) string {
			return `INSERT OR REPLACE INTO checkpoints ` + cols + ` SELECT id, size, root, substr(note, 1, instr(note, char(10) || char(10))), key_name, created_at FROM checkpoints WHERE id = 2`
		}, []string{"ledger checkpoint #2", "not a signed checkpoint"}, false},
		{"checkpoint 2 replaced by the third one's note", func(*testing.T, *signedRoot) string {
			return `INSERT OR REPLACE INTO checkpoints ` + cols + ` SELECT 2, 5, root, note, key_name, created_at FROM checkpoints WHERE id = 3`
		}, []string{"ledger checkpoint #2", "claims size 5", "covers 9"}, true},
		{"checkpoint 2 replaced by a note of another root, signed by another key", func(t *testing.T, s *signedRoot) string {
			return `INSERT OR REPLACE INTO checkpoints ` + cols + ` SELECT id, size, root, '` + strings.ReplaceAll(forgedNote(t, s), "'", "''") +
				`', key_name, created_at FROM checkpoints WHERE id = 2`
		}, []string{"no longer matches ledger checkpoint #2", "signature not checked"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := base.clone(t)
			clitest.Verify(t, 0, s.root)
			q := c.query(t, s)
			a := attack(t, s.root)
			a.exec(t, q)
			a.restore(t)
			// Below the head the verify above kept: the whole log.
			v := clitest.Verify(t, 1, s.root, "--full")
			if !namesCheckpoint(v, c.words...) {
				t.Fatalf("no checkpoint problem naming %q; plain verify found:\n%+v", c.words, v.Problems)
			}
			if c.keyed {
				if v := clitest.Verify(t, 1, s.root, "--verifier-key", s.vkey, "--witness", s.witness); !namesCheckpoint(v, c.words...) {
					t.Fatalf("no checkpoint problem naming %q; verify with the key found:\n%+v", c.words, v.Problems)
				}
			}
		})
	}
}

func namesCheckpoint(v clitest.VerifyReport, words ...string) bool {
	for _, p := range v.Problems {
		all := p.Kind == "checkpoint"
		for _, w := range words {
			all = all && strings.Contains(p.Detail, w)
		}
		if all {
			return true
		}
	}
	return false
}

// One row claiming a huge signed tree, slipped in with the triggers
// dropped, does not stop the writers signing: the next signed write signs
// the checkpoint that is due and copies it to the witness.
func TestWritersSignPastACheckpointRowTheirKeyDidNotSign(t *testing.T) {
	t.Parallel()
	s := newSignedRoot(t).clone(t)
	a := attack(t, s.root)
	a.exec(t, `INSERT INTO checkpoints (size, root, note, key_name, created_at) VALUES (1000000000000, 'x', 'garbage', 'ops', '2099-01-01T00:00:00Z')`)
	a.restore(t)
	pid := strconv.Itoa(os.Getpid())
	for i := range 5 {
		clitest.Must(t, 0, s.root, s.signed("acquire", fmt.Sprintf("w%d", i), "--actor", "frank", "--request-id", fmt.Sprintf("f%d", i), "--pid", pid)...)
	}
	got := witnessSizes(t, s.witness)
	if len(got) < 4 || got[3] != 10 {
		t.Fatalf("witness holds checkpoints of sizes %v after 5 signed writes, want [1 5 9 10 ...]", got)
	}
}
