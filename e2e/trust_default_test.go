package e2e

// Tamper evidence on by default: with no flags at all, writers sign with
// the user's key from the trust store outside the root, pin the ledger on
// first use and keep its latest signed head there; plain verify checks
// the ledger against them.

import (
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/trust"
)

// defaultRoot is a fresh root written by a few lock commands with no
// flags (seq 1-7) and verified (seq 8, the verify's own record), and the
// file holding the head the trust store keeps.
func defaultRoot(t *testing.T) (root, head string) {
	t.Helper()
	root = filepath.Join(t.TempDir(), "root")
	pid := strconv.Itoa(os.Getpid())
	for i, args := range [][]string{
		{"acquire", "app", "--actor", "alice", "--request-id", "a1", "--pid", pid},
		{"release", "app", "--request-id", "a1"},
		{"acquire", "db", "--actor", "bob", "--request-id", "b1", "--pid", pid},
		{"heartbeat", "db", "--request-id", "b1"},
		{"release", "db", "--request-id", "b1"},
		{"acquire", "app", "--actor", "dave", "--request-id", "d1", "--pid", pid},
		{"acquire", "cache", "--actor", "erin", "--request-id", "e1", "--pid", pid},
	} {
		r := clitest.Must(t, 0, root, args...)
		if pinned := strings.Contains(r.Stderr, "on first use: pinned in"); pinned != (i == 0) {
			t.Fatalf("write %d: pinned on first use said %v, want only on the first write\n%s", i+1, pinned, r.Stderr)
		}
	}
	id := ledgerID(t, root)
	head = keptHead(root, id)
	if _, err := os.Stat(head); err != nil {
		t.Fatalf("no signed head kept outside the root: %v", err)
	}
	if v := clitest.Verify(t, 0, root); !strings.Contains(v.Trust, "seq 1-7 match checkpoint "+head) || v.Warning != "" {
		t.Fatalf("plain verify of an untouched root: trust %q, warning %q", v.Trust, v.Warning)
	}
	return root, head
}

// keptHead is the file the trust store keeps the head of ledger id at
// root in.
func keptHead(root, id string) string {
	return trust.Heads{Dir: filepath.Join(clitest.TrustDir(root), "heads"), Root: trust.Resolve(root)}.Path(id)
}

func ledgerID(t *testing.T, root string) string {
	t.Helper()
	var id string
	if err := clitest.DB(t, root).QueryRow(`SELECT value FROM meta WHERE key = 'ledger_id'`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// cutTail deletes the events after seq keep with their Merkle rows, the
// checkpoint rows and the rows and files of the locks that would show it,
// then runs project, as an attacker who can write ROOT would.
func cutTail(t *testing.T, root string, keep int64) {
	t.Helper()
	a := attack(t, root)
	a.exec(t, `DELETE FROM events WHERE seq > ?`, keep)
	a.exec(t, `DELETE FROM tlog_hashes WHERE seq > ?`, keep)
	a.exec(t, `DELETE FROM checkpoints`)
	a.exec(t, `DELETE FROM locks WHERE lock_name IN ('app', 'cache', 'db')`)
	a.exec(t, `DELETE FROM lock_holders WHERE lock_name IN ('app', 'cache', 'db')`)
	a.restore(t)
	for _, f := range []string{"app.lock", "cache.lock", "db.lock"} {
		if err := os.Remove(filepath.Join(root, "locks", f)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	if r := clitest.Run(t, root, "project"); r.Code != 0 && !strings.Contains(r.Stderr, "refusing to sign") {
		t.Fatalf("project after the cut: exit %d\n%s", r.Code, r.Stderr)
	}
}

// shiftDates moves every date of the log, and the ledger's created_at,
// a day back: each event_id is made anew for its new time, and every
// hash recomputed.
func shiftDates(t *testing.T, root string) {
	t.Helper()
	a := attack(t, root)
	back := func(s string) string {
		at, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return events.FormatTime(at.Add(-24 * time.Hour))
	}
	a.rechain(t, func(bs []body) []body {
		for _, b := range bs {
			for k, v := range b {
				if s, ok := v.(string); ok && (k == "at" || strings.HasSuffix(k, "_at")) && s != "" {
					b[k] = back(s)
				}
			}
			at, err := time.Parse(time.RFC3339Nano, b["at"].(string))
			if err != nil {
				t.Fatal(err)
			}
			b["event_id"] = ulid.MustNew(ulid.Timestamp(at), rand.Reader).String()
		}
		return bs
	})
	var created string
	if err := a.db.QueryRow(`SELECT value FROM meta WHERE key = 'created_at'`).Scan(&created); err != nil {
		t.Fatal(err)
	}
	a.exec(t, `UPDATE meta SET value = ? WHERE key = 'created_at'`, back(created))
	a.restore(t)
}

// TestPlainVerifyCatchesEachAttackOnADefaultRoot: on a root written with
// no flags, each rewrite that a plain chain check cannot see makes plain
// verify fail, naming the first bad seq and the head kept outside the
// root.
func TestPlainVerifyCatchesEachAttackOnADefaultRoot(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		attack func(t *testing.T, root string)
		seq    int64
		words  []string
	}{
		{"tail cut and project", func(t *testing.T, root string) { cutTail(t, root, 4) },
			5, []string{"covers 8 events but the log holds 4", "from seq 5 were removed"}},
		{"re-chain with an actor renamed", func(t *testing.T, root string) {
			a := attack(t, root)
			a.rechain(t, func(bs []body) []body { bs[2]["actor"] = "mallory"; return bs })
			a.restore(t)
		}, 1, []string{"no longer matches", "a change lies in seq 1-8"}},
		{"whole root swapped for an older copy", nil,
			4, []string{"covers 7 events but the log holds 3", "from seq 4 were removed"}},
		{"every date rewritten with created_at", shiftDates,
			1, []string{"no longer matches", "a change lies in seq 1-8"}},
		{"a bogus checkpoint row", func(t *testing.T, root string) {
			db, err := sql.Open("sqlite", "file:"+filepath.Join(root, "ledger.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`INSERT INTO checkpoints (size, root, note, key_name, created_at) VALUES (3, 'x', 'garbage', 'tester', '2026-01-01T00:00:00Z')`); err != nil {
				t.Fatal(err)
			}
		}, 9, []string{"ledger checkpoint #2", "is not a checkpoint"}},
		{"INSERT OR REPLACE on checkpoints", func(t *testing.T, root string) {
			a := attack(t, root)
			a.exec(t, `INSERT OR REPLACE INTO checkpoints (id, size, root, note, key_name, created_at) SELECT id, size, root, 'garbage', key_name, created_at FROM checkpoints WHERE id = 1`)
			a.restore(t)
		}, 9, []string{"ledger checkpoint #1", "is not a checkpoint"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.attack == nil {
				root := filepath.Join(t.TempDir(), "root")
				old := filepath.Join(t.TempDir(), "old")
				pid := strconv.Itoa(os.Getpid())
				clitest.Must(t, 0, root, "acquire", "app", "--request-id", "a1", "--pid", pid)
				clitest.Must(t, 0, root, "release", "app", "--request-id", "a1")
				clitest.Must(t, 0, root, "acquire", "db", "--request-id", "b1", "--pid", pid)
				copyTree(t, root, old)
				for _, args := range [][]string{{"heartbeat", "db", "--request-id", "b1"}, {"release", "db", "--request-id", "b1"},
					{"acquire", "app", "--request-id", "d1", "--pid", pid}, {"acquire", "cache", "--request-id", "e1", "--pid", pid}} {
					clitest.Must(t, 0, root, args...)
				}
				if err := os.RemoveAll(root); err != nil {
					t.Fatal(err)
				}
				copyTree(t, old, root)
				mustName(t, clitest.Verify(t, 1, root), c.seq, c.words...)
				return
			}
			root, head := defaultRoot(t)
			c.attack(t, root)
			v := clitest.Verify(t, 1, root)
			mustName(t, v, c.seq, c.words...)
			if v.FirstBad == nil || v.FirstBad.Seq > c.seq {
				t.Fatalf("first bad %+v, want seq %d at the latest", v.FirstBad, c.seq)
			}
			if c.seq != 9 && !strings.Contains(v.FirstBad.Detail+v.Trust, head) && !anyNames(v, head) {
				t.Fatalf("no problem names the head kept in %s: %+v", head, v.Problems)
			}
		})
	}
}

func anyNames(v clitest.VerifyReport, s string) bool {
	for _, p := range v.Problems {
		if strings.Contains(p.Detail, s) {
			return true
		}
	}
	return false
}

// TestDefaultWriterRefusesToSignALaunderedLog: the tail cut, the
// checkpoint rows deleted, project run: the next honest write, with no
// flags, refuses against the head kept outside the root, and changes
// nothing.
func TestDefaultWriterRefusesToSignALaunderedLog(t *testing.T) {
	t.Parallel()
	root, head := defaultRoot(t)
	cutTail(t, root, 4)
	kept := readFile(t, head)
	before, rows := snapLedger(t, root), checkpointRows(t, root)
	r := clitest.Run(t, root, "acquire", "next", "--actor", "frank", "--pid", strconv.Itoa(os.Getpid()))
	if r.Code != 1 || !strings.Contains(r.Stderr, "refusing to sign") || !strings.Contains(r.Stderr, head) {
		t.Fatalf("an honest write on a laundered log: exit %d, want 1 refusing to sign against %s\nstdout: %s\nstderr: %s", r.Code, head, r.Stdout, r.Stderr)
	}
	if after := snapLedger(t, root); after.events != before.events || after.head != before.head {
		t.Fatalf("a refused write changed the log: %s, was %s", after, before)
	}
	if n := checkpointRows(t, root); n != rows {
		t.Fatalf("a refused write stored %d checkpoint rows, want %d", n, rows)
	}
	if readFile(t, head) != kept {
		t.Fatal("a refused write replaced the head kept outside the root")
	}
}

// TestUntouchedDefaultRootVerifiesAfterManyReads: 20 verifies and exports
// with no flags, spread over more than the checkpoint interval, each
// recorded and signed: plain verify says OK every time.
func TestUntouchedDefaultRootVerifiesAfterManyReads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	const interval = time.Second
	short := []string{"--checkpoint-interval", interval.String()}
	pid := strconv.Itoa(os.Getpid())
	clitest.Must(t, 0, root, append(short, "acquire", "app", "--request-id", "a1", "--pid", pid)...)
	clitest.Must(t, 0, root, append(short, "release", "app", "--request-id", "a1")...)
	clitest.Must(t, 0, root, append(short, "acquire", "db", "--request-id", "b1", "--pid", pid)...)
	const reads = 20
	span := 2*interval + 2*time.Second
	start := time.Now()
	for i := range reads {
		time.Sleep(time.Until(start.Add(span * time.Duration(i) / (reads - 1))))
		if i%2 == 1 {
			clitest.Must(t, 0, root, append(short, "export", "-o", filepath.Join(dir, "export-"+strconv.Itoa(i)+".jsonl"))...)
			continue
		}
		if v := clitest.Verify(t, 0, root, short...); !v.OK {
			t.Fatalf("verify %d of an untouched ledger: %+v", i, v.Problems)
		}
	}
	v := clitest.Verify(t, 0, root)
	if !strings.Contains(v.Trust, "match checkpoint "+clitest.TrustDir(root)) || v.UnsignedFrom != 0 {
		t.Fatalf("verify after %d reads: trust %q, unsigned from %d", reads, v.Trust, v.UnsignedFrom)
	}
}

// TestVerifyLedgerIDFailsOnAnotherLedgerSignedWithTheSameKey: two roots of
// one user (one key); verify --ledger-id of one fails on the other, and a
// root whose ledger was swapped for the other's refuses writes and fails
// plain verify, naming both ids.
func TestVerifyLedgerIDFailsOnAnotherLedgerSignedWithTheSameKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	pid := strconv.Itoa(os.Getpid())
	clitest.Must(t, 0, a, "acquire", "x", "--pid", pid)
	clitest.Must(t, 0, b, "acquire", "y", "--pid", pid)
	idA, idB := ledgerID(t, a), ledgerID(t, b)
	clitest.Verify(t, 0, a, "--ledger-id", idA)
	v := clitest.Verify(t, 1, b, "--ledger-id", idA)
	if v.FirstBad == nil || v.FirstBad.Kind != "swapped" || !strings.Contains(v.FirstBad.Detail, idA) || !strings.Contains(v.FirstBad.Detail, idB) {
		t.Fatalf("verify --ledger-id %s of ledger %s: %+v", idA, idB, v.Problems)
	}
	if r := clitest.Must(t, 2, b, "verify", "--ledger-id", "a b"); !strings.Contains(r.Stderr, "--ledger-id") {
		t.Fatalf("a malformed --ledger-id: %s", r.Stderr)
	}
	// b's whole root moved over a's: same key, another ledger.
	if err := os.RemoveAll(a); err != nil {
		t.Fatal(err)
	}
	copyTree(t, b, a)
	v = clitest.Verify(t, 1, a)
	if v.FirstBad == nil || v.FirstBad.Kind != "swapped" || !strings.Contains(v.FirstBad.Detail, idA) {
		t.Fatalf("plain verify of a root pinned to %s holding %s: %+v", idA, idB, v.Problems)
	}
	r := clitest.Must(t, 1, a, "acquire", "z", "--pid", pid)
	for _, w := range []string{idA, idB, "trust forget"} {
		if !strings.Contains(r.Stderr, w) {
			t.Fatalf("a write to a swapped root does not name %q:\n%s", w, r.Stderr)
		}
	}
	clitest.Must(t, 0, a, "trust", "forget", "--yes")
	if r := clitest.Must(t, 0, a, "acquire", "z", "--pid", pid); !strings.Contains(r.Stderr, "on first use") {
		t.Fatalf("a write after trust forget pins nothing:\n%s", r.Stderr)
	}
}

// TestTrustStoreInsideTheRootOrASymlinkIsRefused: exit 2 naming the path
// and the rule, nothing created in the root.
func TestTrustStoreInsideTheRootOrASymlinkIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	real, link, open := filepath.Join(dir, "real"), filepath.Join(dir, "link"), filepath.Join(dir, "open")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, rule string }{
		{filepath.Join(root, "trust"), "is inside the root"},
		{link, "is a symlink"},
		{open, "others can write it"},
	} {
		r := clitest.RunWith(t, root, []string{"LOCKLEDGER_TRUST_DIR=" + c.dir}, "", "acquire", "x", "--pid", strconv.Itoa(os.Getpid()))
		if r.Code != 2 || !strings.Contains(r.Stderr, c.dir) || !strings.Contains(r.Stderr, c.rule) {
			t.Fatalf("trust dir %s: exit %d, want 2 naming it and %q\n%s", c.dir, r.Code, c.rule, r.Stderr)
		}
		if _, err := os.Stat(root); !os.IsNotExist(err) {
			t.Fatalf("a refused trust dir %s left a root behind: %v", c.dir, err)
		}
	}
}

// TestUnsignedWritesAreSaidLoudlyByVerify: --unsigned writes sign and pin
// nothing; verify exits 0 on the sound chain and says, on stderr and in
// --json, that nothing outside the root vouches for it.
func TestUnsignedWritesAreSaidLoudlyByVerify(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "root")
	pid := strconv.Itoa(os.Getpid())
	if r := clitest.Must(t, 0, root, "--unsigned", "acquire", "x", "--pid", pid); strings.Contains(r.Stderr, "pinned") {
		t.Fatalf("--unsigned pinned the ledger:\n%s", r.Stderr)
	}
	clitest.RunWith(t, root, []string{"LOCKLEDGER_UNSIGNED=1"}, "", "acquire", "y", "--pid", pid)
	if n := checkpointRows(t, root); n != 0 {
		t.Fatalf("--unsigned writes stored %d checkpoint rows", n)
	}
	if _, err := os.Stat(filepath.Join(clitest.TrustDir(root), "known_ledgers")); !os.IsNotExist(err) {
		t.Fatalf("--unsigned writes pinned the ledger: %v", err)
	}
	r := clitest.RunWith(t, root, []string{"LOCKLEDGER_UNSIGNED=1"}, "", "verify", "--json")
	v := clitest.DecodeVerify(t, r)
	if r.Code != 0 || !v.OK || !strings.Contains(v.Warning, "unsigned") || !strings.Contains(v.Warning, "nothing outside the root vouches") ||
		!strings.Contains(r.Stderr, "warning: this ledger is unsigned") {
		t.Fatalf("verify of an unsigned ledger: exit %d, warning %q\nstderr: %s", r.Code, v.Warning, r.Stderr)
	}
	// Adopted: verified in full, pinned, its head signed.
	clitest.Must(t, 0, root, "trust", "adopt")
	if v := clitest.Verify(t, 0, root); v.Warning != "" || !strings.Contains(v.Trust, "match") {
		t.Fatalf("verify after trust adopt: trust %q, warning %q", v.Trust, v.Warning)
	}
}

// TestAuditorPinsTheLedgerFromTrustExport: the writer's trust export,
// pinned by an auditor with a trust store of their own, makes the
// auditor's plain verify check the writer's signatures and the ledger id;
// show lists the pin and the head kept.
func TestAuditorPinsTheLedgerFromTrustExport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root, other := filepath.Join(dir, "root"), filepath.Join(dir, "other")
	pid := strconv.Itoa(os.Getpid())
	clitest.Must(t, 0, root, "acquire", "x", "--pid", pid)
	clitest.Must(t, 0, other, "acquire", "y", "--pid", pid)
	var shown struct {
		VerifierKey string `json:"verifier_key"`
		Pins        []struct {
			LedgerID string `json:"ledger_id"`
			Verifier string `json:"verifier_key"`
		} `json:"pins"`
		Heads []struct {
			Size int64 `json:"size"`
		} `json:"heads"`
	}
	if err := json.Unmarshal([]byte(clitest.Must(t, 0, root, "trust", "show", "--json").Stdout), &shown); err != nil {
		t.Fatal(err)
	}
	id := ledgerID(t, root)
	if len(shown.Pins) != 1 || shown.Pins[0].LedgerID != id || shown.Pins[0].Verifier != shown.VerifierKey || len(shown.Heads) != 1 || shown.Heads[0].Size != 1 {
		t.Fatalf("trust show: %+v", shown)
	}
	export := clitest.Must(t, 0, root, "trust", "export").Stdout
	if !strings.Contains(export, "--ledger-id "+id+" --verifier-key "+shown.VerifierKey) {
		t.Fatalf("trust export:\n%s", export)
	}
	auditor := []string{"LOCKLEDGER_TRUST_DIR=" + filepath.Join(dir, "auditor-trust"), "LOCKLEDGER_UNSIGNED=1"}
	audit := func(want int, root string, args ...string) clitest.Result {
		t.Helper()
		r := clitest.RunWith(t, root, auditor, "", args...)
		if r.Code != want {
			t.Fatalf("auditor: lockledger %s: exit %d, want %d\n%s%s", strings.Join(args, " "), r.Code, want, r.Stdout, r.Stderr)
		}
		return r
	}
	if r := audit(0, root, "verify"); !strings.Contains(r.Stderr, "signatures were not checked") {
		t.Fatalf("the auditor's verify before pinning does not warn that the signatures went unchecked:\n%s", r.Stderr)
	}
	audit(0, root, "trust", "pin", "--ledger-id", id, "--verifier-key", shown.VerifierKey)
	audit(0, other, "trust", "pin", "--ledger-id", id, "--verifier-key", shown.VerifierKey)
	v := clitest.DecodeVerify(t, audit(0, root, "verify", "--json"))
	if !strings.Contains(v.Trust, "match ledger checkpoint") || v.Warning != "" {
		t.Fatalf("the auditor's verify after pinning: trust %q, warning %q", v.Trust, v.Warning)
	}
	v = clitest.DecodeVerify(t, audit(1, other, "verify", "--json"))
	if v.FirstBad == nil || v.FirstBad.Kind != "swapped" || !strings.Contains(v.FirstBad.Detail, id) {
		t.Fatalf("the auditor's verify of another ledger where %s is pinned: %+v", id, v.Problems)
	}
}
