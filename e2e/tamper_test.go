package e2e

// The tamper corpus: what someone who can write ROOT (and no key) does to
// the record, and what a signed checkpoint kept on a witness shows of it.

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	ckpt "github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/store"
)

// signedRoot is a ledger written with a key and a witness file.
type signedRoot struct {
	root, key, vkey, witness string
}

// signed runs a writer with the key and the witness, a checkpoint every 4 events.
func (s *signedRoot) signed(args ...string) []string {
	return append([]string{"--signing-key", s.key, "--witness", s.witness, "--checkpoint-every", "4"}, args...)
}

// newSignedRoot writes nine events through the CLI; writers with the key
// sign checkpoints at sizes 1 (the first write finds none), 5 and 9.
func newSignedRoot(t *testing.T) *signedRoot {
	t.Helper()
	dir := t.TempDir()
	s := &signedRoot{root: filepath.Join(dir, "root"), key: filepath.Join(dir, "keys", "signing.key"),
		witness: filepath.Join(dir, "witness", "ledger.checkpoints")}
	clitest.Unsigned(t, s.root)
	for _, d := range []string{filepath.Dir(s.key), filepath.Dir(s.witness)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	s.vkey = strings.TrimSpace(clitest.Must(t, 0, s.root, "keygen", "--name", "ops", "-o", s.key).Stdout)
	pid := strconv.Itoa(os.Getpid())
	for _, args := range [][]string{
		{"acquire", "app", "--actor", "alice", "--request-id", "a1", "--pid", pid},
		{"release", "app", "--request-id", "a1"},
		{"acquire", "db", "--actor", "bob", "--request-id", "b1", "--pid", pid},
		{"heartbeat", "db", "--request-id", "b1"},
		{"steal", "db", "--active", "--reason", "hotfix", "--yes", "--actor", "carol", "--request-id", "c1", "--pid", pid},
		{"release", "db", "--request-id", "c1"},
		{"acquire", "app", "--actor", "dave", "--request-id", "d1", "--pid", pid},
		{"heartbeat", "app", "--request-id", "d1"},
		{"acquire", "cache", "--actor", "erin", "--request-id", "e1", "--pid", pid},
	} {
		clitest.Must(t, 0, s.root, s.signed(args...)...)
	}
	if got := witnessSizes(t, s.witness); fmt.Sprint(got) != "[1 5 9]" {
		t.Fatalf("witness holds checkpoints of sizes %v, want [1 5 9]", got)
	}
	return s
}

// clone copies the root and the witness, for one scenario.
func (s *signedRoot) clone(t *testing.T) *signedRoot {
	t.Helper()
	dir := t.TempDir()
	c := *s
	c.root, c.witness = filepath.Join(dir, "root"), filepath.Join(dir, "ledger.checkpoints")
	clitest.Unsigned(t, c.root)
	copyTree(t, s.root, c.root)
	copyFile(t, s.witness, c.witness)
	return &c
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		switch {
		case fi.IsDir():
			return os.MkdirAll(to, fi.Mode().Perm())
		case strings.HasSuffix(p, "-shm"):
			return nil // SQLite rebuilds the WAL index
		}
		copyFile(t, p, to)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	fi, _ := in.Stat()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fi.Mode().Perm())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

func witnessSizes(t *testing.T, path string) []int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, e := range ckpt.SplitNotes(b) {
		c, err := ckpt.Open(e.Note)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c.Size)
	}
	return out
}

// mustName fails unless a checkpoint problem at seq names every word.
func mustName(t *testing.T, v clitest.VerifyReport, seq int64, words ...string) {
	t.Helper()
	for _, p := range v.Problems {
		if p.Kind != "checkpoint" || p.Seq != seq {
			continue
		}
		all := true
		for _, w := range words {
			all = all && strings.Contains(p.Detail, w)
		}
		if all {
			return
		}
	}
	t.Fatalf("no checkpoint problem at seq %d naming %q; verify found:\n%+v", seq, words, v.Problems)
}

// attacker is a plain SQL connection to the ledger with every guard
// trigger dropped; restore puts them back as they were, so that verify's
// trigger check sees nothing.
type attacker struct {
	db       *sql.DB
	triggers []string
}

func attack(t *testing.T, root string) *attacker {
	t.Helper()
	db := fixture.RawDB(t, root)
	a := &attacker{db: db}
	// Whoever can write ROOT removes the root's pin of the ledger too.
	if err := os.Remove(filepath.Join(root, "ledger.pin")); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	rows, err := db.Query(`SELECT name, sql FROM sqlite_master WHERE type = 'trigger'`)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for rows.Next() {
		var n, s string
		if err := rows.Scan(&n, &s); err != nil {
			t.Fatal(err)
		}
		names, a.triggers = append(names, n), append(a.triggers, s)
	}
	rows.Close()
	for _, n := range names {
		a.exec(t, `DROP TRIGGER `+n)
	}
	return a
}

func (a *attacker) exec(t *testing.T, q string, args ...any) {
	t.Helper()
	if _, err := a.db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func (a *attacker) restore(t *testing.T) {
	t.Helper()
	for _, s := range a.triggers {
		a.exec(t, s)
	}
}

// body is an event body as a generic object.
type body = fixture.Body

// rechain rewrites the whole log: edit gets the bodies in order and
// returns the new ones (seq is set from the position), and every chain
// hash, indexed column and stored Merkle hash is recomputed, from the
// ledger's own genesis. The checkpoints the ledger stores, which no one
// without the key can re-sign, are deleted.
func (a *attacker) rechain(t *testing.T, edit func([]body) []body) {
	t.Helper()
	a.exec(t, `DELETE FROM checkpoints`)
	fixture.Rechain(t, a.db, edit)
}

func (a *attacker) bodyOf(t *testing.T, seq int64) body {
	t.Helper()
	var b []byte
	if err := a.db.QueryRow(`SELECT body FROM events WHERE seq = ?`, seq).Scan(&b); err != nil {
		t.Fatal(err)
	}
	return fixture.DecodeBody(t, b)
}

func witnessTime(t *testing.T, path string, size int64) time.Time {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ckpt.SplitNotes(b) {
		if c, err := ckpt.Open(e.Note); err == nil && c.Size == size {
			return c.Time
		}
	}
	t.Fatalf("no checkpoint of size %d in %s", size, path)
	return time.Time{}
}

// forgedRelease is erin's release of cache (seq 9's holding), dated at.
func forgedRelease(t *testing.T, a *attacker, at time.Time) body {
	t.Helper()
	m := a.bodyOf(t, 9)
	return body{"event_id": events.NewULID(at), "type": "lock_released", "schema_version": m["schema_version"],
		"at": events.FormatTime(at), "lock_name": "cache", "request_id": "e1", "actor": "erin", "host_id": m["host_id"],
		"pid": m["pid"], "held_duration_seconds": 1, "result": "success", "forced": false, "fencing_token": 9}
}

// TestTamperCorpusIsDetectedAgainstTheWitness: with a key and a witness,
// each way of rewriting the record that a hash chain cannot show is
// detected, naming the checkpoint and the first seq that no longer
// matches. The same ledger untouched verifies.
func TestTamperCorpusIsDetectedAgainstTheWitness(t *testing.T) {
	t.Parallel()
	base := newSignedRoot(t)
	v := clitest.Verify(t, 0, base.root, "--verifier-key", base.vkey, "--witness", base.witness)
	if !strings.HasPrefix(v.Trust, "seq 1-9 match checkpoint "+base.witness) {
		t.Fatalf("untouched: trust %q", v.Trust)
	}
	if v := clitest.Verify(t, 0, base.root); v.Trust != "not checked: the ledger holds 3 signed checkpoints, and no key pinned at this root or given with --verifier-key checks them" {
		t.Fatalf("without a key verify says %q", v.Trust)
	}
	check := func(s *signedRoot, args ...string) clitest.VerifyReport {
		t.Helper()
		return clitest.Verify(t, 1, s.root, append([]string{"--verifier-key", s.vkey, "--witness", s.witness}, args...)...)
	}

	t.Run("truncation after a checkpoint", func(t *testing.T) {
		s := base.clone(t)
		a := attack(t, s.root)
		a.exec(t, `DELETE FROM events WHERE seq > 7`)
		a.exec(t, `DELETE FROM tlog_hashes WHERE seq > 7`)
		a.exec(t, `DELETE FROM checkpoints WHERE size > 7`)
		a.restore(t)
		mustName(t, check(s), 8, s.witness+":", "size 9, key ops", "truncated")
		// project refuses the cut the locks table shows; the attacker
		// accepts it, and project appends its own events in place of the
		// cut ones: the log is no longer the one signed from the last
		// checkpoint that still matches.
		clitest.Must(t, 1, s.root, "project")
		clitest.Must(t, 0, s.root, "project", "--accept-broken-chain")
		mustName(t, check(s), 6, s.witness+":", "size 9, key ops", "no longer matches", "the first 5 match")
	})

	t.Run("forged append followed by project", func(t *testing.T) {
		// erin's release of cache, appended after the last checkpoint and
		// made consistent by project: dated later than the writer's
		// promise of its next checkpoint, or dated back before it.
		for _, tc := range []struct {
			name  string
			shift time.Duration
			words []string
		}{
			{"dated later", 2 * time.Minute, []string{"size 9, key ops", "without the key"}},
			{"dated back", -time.Hour, []string{"size 9, key ops", "dated back"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s := base.clone(t)
				a := attack(t, s.root)
				forged := fixture.AppendBody(t, a.db, forgedRelease(t, a, witnessTime(t, s.witness, 9).Add(tc.shift)))
				a.restore(t)
				// The times of the forgery and of project's own events may
				// already give it away without a key (time_backwards); the
				// attacker projects anyway.
				clitest.Must(t, 0, s.root, "project", "--accept-broken-chain")
				mustName(t, check(s), forged, append([]string{s.witness + ":"}, tc.words...)...)
			})
		}
	})

	t.Run("full re-chain", func(t *testing.T) {
		for _, tc := range []struct {
			name     string
			edit     func([]body) []body
			firstBad int64 // the seq after the largest checkpoint that still matches
			size     string
		}{
			{"an actor renamed", func(bs []body) []body { bs[2]["actor"] = "mallory"; return bs }, 2, "size 5"},
			{"a steal dropped", func(bs []body) []body {
				// carol's steal gone, her release made bob's.
				bs[5]["request_id"], bs[5]["actor"], bs[5]["fencing_token"] = "b1", "bob", 3
				return append(bs[:4:4], bs[5:]...)
			}, 2, "size 5"},
			{"a take-over backdated", func(bs []body) []body {
				at, _ := events.ParseTime(bs[6]["at"].(string))
				bs[6]["at"] = events.FormatTime(at.Add(-time.Hour))
				bs[6]["event_id"] = events.NewULID(at.Add(-time.Hour))
				return bs
			}, 6, "size 9"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s := base.clone(t)
				a := attack(t, s.root)
				a.rechain(t, tc.edit)
				a.restore(t)
				// Some of these re-chains leave traces verify finds without a
				// key (a fencing token, a time stepping back); the attacker
				// projects anyway.
				clitest.Must(t, 0, s.root, "project", "--accept-broken-chain")
				mustName(t, check(s), tc.firstBad, s.witness+":", tc.size, "no longer matches")
			})
		}
	})

	t.Run("swapped database", func(t *testing.T) {
		s := base.clone(t)
		other := t.TempDir()
		clitest.Must(t, 0, other, "acquire", "app", "--actor", "mallory", "--pid", strconv.Itoa(os.Getpid()))
		if err := os.RemoveAll(s.root); err != nil {
			t.Fatal(err)
		}
		copyTree(t, other, s.root)
		v := check(s)
		mustName(t, v, 1, "the witness "+s.witness+" holds no valid checkpoint")
	})

	t.Run("re-chained export", func(t *testing.T) {
		s := base.clone(t)
		export := filepath.Join(t.TempDir(), "audit.jsonl")
		clitest.Must(t, 0, s.root, "export", "-o", export)
		clitest.Verify(t, 0, s.root, "--file", export, "--verifier-key", s.vkey)
		clitest.Verify(t, 0, s.root, "--file", export, "--verifier-key", s.vkey, "--witness", s.witness)
		// bob becomes mallory, every hash recomputed; the checkpoint lines kept.
		lines := strings.Split(strings.TrimSpace(readFile(t, export)), "\n")
		prev, out := "", []string{}
		for _, l := range lines {
			var el struct {
				Seq      *int64          `json:"seq"`
				PrevHash string          `json:"prev_hash"`
				Body     json.RawMessage `json:"body"`
			}
			if err := json.Unmarshal([]byte(l), &el); err != nil {
				t.Fatal(err)
			}
			if el.Seq == nil {
				out = append(out, l) // a checkpoint line
				continue
			}
			if prev == "" {
				prev = el.PrevHash
			}
			b := bytes.Replace(el.Body, []byte(`"actor":"bob"`), []byte(`"actor":"mallory"`), 1)
			h := events.ChainHash(*el.Seq, prev, b)
			out = append(out, fmt.Sprintf(`{"seq":%d,"prev_hash":%q,"hash":%q,"body":%s}`, *el.Seq, prev, h, b))
			prev = h
		}
		forged := filepath.Join(t.TempDir(), "forged.jsonl")
		writeFile(t, forged, strings.Join(out, "\n")+"\n")
		if v := clitest.Verify(t, 0, s.root, "--file", forged); !v.OK {
			t.Fatalf("the re-chained export is not consistent: %+v", v.Problems)
		}
		mustName(t, clitest.Verify(t, 1, s.root, "--file", forged, "--verifier-key", s.vkey), 2, forged+" line", "size 5, key ops")
		mustName(t, clitest.Verify(t, 1, s.root, "--file", forged, "--verifier-key", s.vkey, "--witness", s.witness), 2, s.witness+":", "size 5")
		// Without its checkpoint lines, nothing vouches for it.
		var bare []string
		for _, l := range out {
			if !strings.HasPrefix(l, `{"checkpoint"`) {
				bare = append(bare, l)
			}
		}
		writeFile(t, forged, strings.Join(bare, "\n")+"\n")
		mustName(t, clitest.Verify(t, 1, s.root, "--file", forged, "--verifier-key", s.vkey), 1, "nothing vouches for it")
	})

	t.Run("checkpoint signed by another key", func(t *testing.T) {
		// The attacker re-chains and replaces the witness with a
		// checkpoint of the forged log, signed by a key of the same name.
		s := base.clone(t)
		a := attack(t, s.root)
		a.rechain(t, func(bs []body) []body { bs[2]["actor"] = "mallory"; return bs })
		a.restore(t)
		mine := filepath.Join(t.TempDir(), "mine.key")
		clitest.Must(t, 0, s.root, "keygen", "--name", "ops", "-o", mine)
		if err := os.Remove(s.witness); err != nil {
			t.Fatal(err)
		}
		clitest.Must(t, 0, s.root, "checkpoint", "--signing-key", mine, "--witness", s.witness)
		v := check(s)
		mustName(t, v, 1, s.witness+":1", "is not vouched for", "signed by ops, not by a given verifier key")
		mustName(t, v, 1, "holds no valid checkpoint")
	})

	t.Run("edited checkpoint", func(t *testing.T) {
		// The attacker re-chains from seq 7 and edits the witness's last
		// checkpoint to the forged root; its signature no longer holds.
		s := base.clone(t)
		a := attack(t, s.root)
		a.rechain(t, func(bs []body) []body { bs[6]["actor"] = "mallory"; return bs })
		a.restore(t)
		clitest.Must(t, 0, s.root, "project")
		text := readFile(t, s.witness)
		var root9 string
		for _, e := range ckpt.SplitNotes([]byte(text)) {
			if c, err := ckpt.Open(e.Note); err == nil && c.Size == 9 {
				root9 = c.Root.String()
			}
		}
		writeFile(t, s.witness, strings.Replace(text, root9, forgedRoot(t, s.root, 9), 1))
		v := check(s)
		mustName(t, v, 6, s.witness+":", "size 9, key ops", "was changed after it was signed", "the first 5 match")
	})
}

// forgedRoot is the Merkle root of the first n events as the ledger now
// stores them.
func forgedRoot(t *testing.T, root string, n int64) string {
	t.Helper()
	db := clitest.DB(t, root)
	h, err := tlog.TreeHash(n, store.TreeReader(context.Background(), db))
	if err != nil {
		t.Fatal(err)
	}
	return h.String()
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestProofsFromTheLedgerVerifyOffline: prove's inclusion and consistency
// proofs check with verify-proof and the verifier key, in both forms, and
// fail once altered or under another key.
func TestProofsFromTheLedgerVerifyOffline(t *testing.T) {
	t.Parallel()
	s := newSignedRoot(t)
	dir := t.TempDir()
	old, latest := filepath.Join(dir, "old.checkpoint"), filepath.Join(dir, "new.checkpoint")
	text := readFile(t, s.witness)
	notes := ckpt.SplitNotes([]byte(text))
	writeFile(t, old, string(notes[1].Note))
	writeFile(t, latest, string(notes[2].Note))
	for _, form := range [][]string{nil, {"--json"}} {
		inc := clitest.Must(t, 0, s.root, append([]string{"prove", "event", "5", "--checkpoint", s.witness}, form...)...).Stdout
		con := clitest.Must(t, 0, s.root, append([]string{"prove", "extends", old, latest}, form...)...).Stdout
		for _, p := range []string{inc, con} {
			f := filepath.Join(dir, "proof")
			writeFile(t, f, p)
			r := clitest.Must(t, 0, s.root, "verify-proof", f, "--verifier-key", s.vkey)
			if !strings.Contains(r.Stdout, "verify-proof: OK") || !strings.Contains(r.Stdout, "signed by   ops (verified)") {
				t.Fatalf("verify-proof:\n%s", r.Stdout)
			}
			other := strings.TrimSpace(clitest.Must(t, 0, s.root, "keygen", "--name", "ops", "-o", filepath.Join(t.TempDir(), "k")).Stdout)
			clitest.Must(t, 1, s.root, "verify-proof", f, "--verifier-key", other)
		}
		if !strings.Contains(inc, "lock_stolen") {
			t.Fatalf("the proof of seq 5 does not carry the steal:\n%s", inc)
		}
		// The event's body altered: the leaf no longer matches.
		f := filepath.Join(dir, "altered")
		writeFile(t, f, strings.Replace(inc, "hotfix", "routine", 1))
		r := clitest.Must(t, 1, s.root, "verify-proof", f, "--verifier-key", s.vkey)
		if !strings.Contains(r.Stdout, "body was changed") {
			t.Fatalf("altered body:\n%s", r.Stdout)
		}
	}
	// A ledger that no longer matches the checkpoint proves nothing.
	a := attack(t, s.root)
	a.rechain(t, func(bs []body) []body { bs[2]["actor"] = "mallory"; return bs })
	a.restore(t)
	r := clitest.Must(t, 1, s.root, "prove", "event", "5", "--checkpoint", s.witness)
	if !strings.Contains(r.Stderr, "not to the checkpoint's root") {
		t.Fatalf("prove against a checkpoint the ledger no longer matches:\n%s", r.Stderr)
	}
}

// TestSigningKeyInsideTheRootIsRefused: a key (or a witness) kept where
// the ledger's writers can write protects nothing: exit 2, naming it, and
// nothing is written.
func TestSigningKeyInsideTheRootIsRefused(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	clitest.Must(t, 0, root, "acquire", "a", "--pid", strconv.Itoa(os.Getpid()))
	key := filepath.Join(root, "signing.key")
	r := clitest.Must(t, 2, root, "keygen", "--name", "ops", "-o", key)
	if !strings.Contains(r.Stderr, key) || !strings.Contains(r.Stderr, "protects nothing") {
		t.Fatalf("keygen into the root:\n%s", r.Stderr)
	}
	outside := filepath.Join(t.TempDir(), "signing.key")
	clitest.Must(t, 0, root, "keygen", "--name", "ops", "-o", outside)
	copyFile(t, outside, key)
	before := clitest.EventCount(t, root)
	r = clitest.Must(t, 2, root, "--signing-key", key, "acquire", "b")
	if !strings.Contains(r.Stderr, key) || !strings.Contains(r.Stderr, "protects nothing") {
		t.Fatalf("a writer with a key in the root:\n%s", r.Stderr)
	}
	r = clitest.Must(t, 2, root, "--signing-key", outside, "--witness", filepath.Join(root, "w"), "acquire", "b")
	if !strings.Contains(r.Stderr, "witnesses nothing") {
		t.Fatalf("a witness in the root:\n%s", r.Stderr)
	}
	if n := clitest.EventCount(t, root); n != before {
		t.Fatalf("a refused writer appended %d events", n-before)
	}
	r = clitest.Must(t, 2, root, "keygen", "--name", "ops", "-o", outside)
	if !strings.Contains(r.Stderr, "never overwrites") {
		t.Fatalf("keygen over a key:\n%s", r.Stderr)
	}
}

// TestUntouchedLargeLedgerVerifiesAgainstThreeCheckpoints: 20,000 events
// (make stress: 100,000; a steady fixture, bulk-loaded with sqlite3),
// checkpoints signed at three sizes on a witness, and verify finds them
// all matching.
func TestUntouchedLargeLedgerVerifiesAgainstThreeCheckpoints(t *testing.T) {
	t.Parallel()
	n := int64(20_000)
	if stressed() {
		n = 100_000
	}
	dir := t.TempDir()
	root, witness, key := filepath.Join(dir, "root"), filepath.Join(dir, "witness"), filepath.Join(dir, "signing.key")
	clitest.NeedBinary(t, "sqlite3")
	if err := (fixture.Steady{Events: int(n), SQLite3: "sqlite3"}).Write(root); err != nil {
		t.Fatal(err)
	}
	vkey := strings.TrimSpace(clitest.Must(t, 0, root, "keygen", "--name", "ops", "-o", key).Stdout)
	skey := strings.TrimSpace(readFile(t, key))
	signer, err := ckpt.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	db := clitest.DB(t, root)
	var id string
	if err := db.QueryRow(`SELECT value FROM meta WHERE key = 'ledger_id'`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	// Two checkpoints a writer signed on the way (their roots from the
	// stored tree at those sizes), then one signed by the command now.
	var notes []byte
	for _, size := range []int64{n / 4, n / 2} {
		h, err := tlog.TreeHash(size, store.TreeReader(context.Background(), db))
		if err != nil {
			t.Fatal(err)
		}
		msg, err := ckpt.Sign(ckpt.Checkpoint{Origin: ckpt.Origin(id), Size: size, Root: h}, signer)
		if err != nil {
			t.Fatal(err)
		}
		notes = append(notes, msg...)
	}
	writeFile(t, witness, string(notes))
	clitest.Must(t, 0, root, "checkpoint", "--signing-key", key, "--witness", witness)
	total := int64(clitest.EventCount(t, root))
	if got := witnessSizes(t, witness); fmt.Sprint(got) != fmt.Sprint([]int64{n / 4, n / 2, total}) {
		t.Fatalf("witness sizes %v", got)
	}
	v := clitest.Verify(t, 0, root, "--verifier-key", vkey, "--witness", witness)
	if !strings.HasPrefix(v.Trust, fmt.Sprintf("seq 1-%d match checkpoint %s:", total, witness)) || v.UnsignedFrom != 0 {
		t.Fatalf("trust %q, unsigned from %d", v.Trust, v.UnsignedFrom)
	}
}

// TestExportSliceIsCheckedAgainstTheCheckpointsItCarries: a slice that
// starts after seq 1 carries the Merkle tree before it, so the
// checkpoints it covers are checked on the slice alone; a forged tree
// line, like a forged event, makes them disagree.
func TestExportSliceIsCheckedAgainstTheCheckpointsItCarries(t *testing.T) {
	t.Parallel()
	s := newSignedRoot(t)
	var since string
	if err := clitest.DB(t, s.root).QueryRow(`SELECT at FROM events WHERE seq = 4`).Scan(&since); err != nil {
		t.Fatal(err)
	}
	slice := filepath.Join(t.TempDir(), "slice.jsonl")
	clitest.Must(t, 0, s.root, "export", "--since", since, "-o", slice)
	text := readFile(t, slice)
	if !strings.HasPrefix(text, `{"tree":{"size":3,"frontier":[`) || strings.Count(text, `{"checkpoint":`) != 2 {
		t.Fatalf("the slice from seq 4 does not carry the tree before it and checkpoints 5 and 9:\n%s", text)
	}
	v := clitest.Verify(t, 0, s.root, "--file", slice, "--verifier-key", s.vkey)
	if !strings.HasPrefix(v.Trust, "seq 4-9 are events 4-9 of the log checkpoint "+slice+" line 3") {
		t.Fatalf("slice: trust %q", v.Trust)
	}
	// A frontier of another tree: the roots no longer match.
	first, rest, _ := strings.Cut(text, "\n")
	var tl struct {
		Tree struct {
			Size     int64    `json:"size"`
			Frontier []string `json:"frontier"`
		} `json:"tree"`
	}
	if err := json.Unmarshal([]byte(first), &tl); err != nil || len(tl.Tree.Frontier) != 2 {
		t.Fatalf("tree line %s: %v", first, err)
	}
	forged := strings.Replace(first, tl.Tree.Frontier[1], tlog.RecordHash([]byte("x")).String(), 1)
	writeFile(t, slice, forged+"\n"+rest)
	mustName(t, clitest.Verify(t, 1, s.root, "--file", slice, "--verifier-key", s.vkey), 4, slice+" line 2", "size 5", "no longer matches")
}

// TestExpectHeadWithoutAKey: a head written down earlier (verify prints
// it) shows a re-chain without any key; a malformed one is invalid input.
func TestExpectHeadWithoutAKey(t *testing.T) {
	t.Parallel()
	s := newSignedRoot(t)
	var h5 string
	if err := clitest.DB(t, s.root).QueryRow(`SELECT hash FROM events WHERE seq = 5`).Scan(&h5); err != nil {
		t.Fatal(err)
	}
	v := clitest.Verify(t, 0, s.root, "--expect-head", "5:"+h5)
	if !strings.HasPrefix(v.Trust, "seq 1-5 match expected head 5:") || v.UnsignedFrom != 6 {
		t.Fatalf("trust %q, unsigned from %d", v.Trust, v.UnsignedFrom)
	}
	a := attack(t, s.root)
	a.rechain(t, func(bs []body) []body { bs[2]["actor"] = "mallory"; return bs })
	a.restore(t)
	mustName(t, clitest.Verify(t, 1, s.root, "--expect-head", "5:"+h5), 1, "expected head 5:"+h5, "no longer matches")
	r := clitest.Must(t, 2, s.root, "verify", "--expect-head", "5")
	if !strings.Contains(r.Stderr, "--expect-head") {
		t.Fatalf("malformed --expect-head:\n%s", r.Stderr)
	}
	r = clitest.Must(t, 2, s.root, "verify", "--witness", s.witness)
	if !strings.Contains(r.Stderr, "need --verifier-key") {
		t.Fatalf("--witness without --verifier-key:\n%s", r.Stderr)
	}
	// The writers' LOCKLEDGER_WITNESS in the environment asks nothing of
	// a verify without keys, which cannot see the re-chain in the log
	// alone (--full: not against the head this user verified before) and
	// says so.
	c := clitest.Command(context.Background(), s.root, "verify", "--full")
	c.Env = append(c.Env, "LOCKLEDGER_WITNESS="+s.witness)
	if out, err := c.CombinedOutput(); err != nil || !strings.Contains(string(out), "unsigned: truncation and re-chaining are not detectable") {
		t.Fatalf("verify with LOCKLEDGER_WITNESS set and no key: %v\n%s", err, out)
	}
}
