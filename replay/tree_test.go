package replay_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/verify"
)

// treeLog is a hand-built log of n acquire/release pairs' events.
func treeLog(t *testing.T, n int) *ovlLog {
	t.Helper()
	g := newOvlLog(t)
	for range n / 2 {
		tok := g.acquire("x", "req")
		g.release("x", "req", tok)
	}
	return g
}

func verifyTree(t *testing.T, g *ovlLog, opts ...replay.VerifyOption) *verify.Report {
	t.Helper()
	rep, _, err := replay.VerifyLedger(context.Background(), g.db, "test", events.Genesis("overlap-test"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	rep.Finish()
	return rep
}

func onlyProblem(t *testing.T, rep *verify.Report, kind verify.Kind, seq int64, words ...string) verify.Problem {
	t.Helper()
	if rep.OK || rep.FirstBad == nil || rep.FirstBad.Kind != kind || rep.FirstBad.Seq != seq {
		t.Fatalf("want first bad %s at seq %d, got %+v", kind, seq, rep.Problems)
	}
	for _, w := range words {
		if !strings.Contains(rep.FirstBad.Detail, w) {
			t.Fatalf("%q does not say %q", rep.FirstBad.Detail, w)
		}
	}
	return *rep.FirstBad
}

func TestVerifyFindsEditedMissingAndLeftoverStoredHashes(t *testing.T) {
	g := treeLog(t, 20)
	if rep := verifyTree(t, g); !rep.OK || rep.Trust != verify.Unsigned {
		t.Fatalf("untouched: %+v (trust %q)", rep.Problems, rep.Trust)
	}
	if _, err := g.db.Exec(`DROP TRIGGER tlog_hashes_no_update`); err != nil {
		t.Fatal(err)
	}
	if _, err := g.db.Exec(`UPDATE tlog_hashes SET hashes = zeroblob(length(hashes)) WHERE seq = 7`); err != nil {
		t.Fatal(err)
	}
	onlyProblem(t, verifyTree(t, g), verify.KindMerkle, 7, "edited")

	g = treeLog(t, 20)
	if _, err := g.db.Exec(`DROP TRIGGER tlog_hashes_no_delete`); err != nil {
		t.Fatal(err)
	}
	if _, err := g.db.Exec(`DELETE FROM tlog_hashes WHERE seq = 12`); err != nil {
		t.Fatal(err)
	}
	onlyProblem(t, verifyTree(t, g), verify.KindMerkle, 12, "no stored Merkle hashes")

	// A tail deleted with its chain intact leaves its stored hashes behind.
	g = treeLog(t, 20)
	if _, err := g.db.Exec(`DROP TRIGGER events_no_delete`); err != nil {
		t.Fatal(err)
	}
	if _, err := g.db.Exec(`DELETE FROM events WHERE seq > 16`); err != nil {
		t.Fatal(err)
	}
	onlyProblem(t, verifyTree(t, g), verify.KindMerkle, 17, "deleted from its end")
}

// signedHeads signs checkpoints of g's log at the given sizes.
func signedHeads(t *testing.T, g *ovlLog, s note.Signer, sizes ...int64) []replay.NoteSource {
	t.Helper()
	rows, err := g.db.Query(`SELECT body FROM events ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var tree checkpoint.Tree
	var out []replay.NoteSource
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			t.Fatal(err)
		}
		if _, err := tree.Append(checkpoint.LeafHash(b)); err != nil {
			t.Fatal(err)
		}
		for _, n := range sizes {
			if n == tree.Size() {
				root, _ := tree.Root()
				msg, err := checkpoint.Sign(checkpoint.Checkpoint{Origin: checkpoint.Origin("overlap-test"), Size: n, Root: root}, s)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, replay.NoteSource{Source: "checkpoint witness:" + string(rune('0'+len(out))), Note: msg})
			}
		}
	}
	return out
}

func keys(t *testing.T, name string) (note.Signer, note.Verifier) {
	t.Helper()
	sk, vk, err := checkpoint.GenerateKey(name)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := checkpoint.NewSigner(sk)
	v, _ := checkpoint.NewVerifier(vk)
	return s, v
}

func TestVerifyAgainstCheckpointsNamesTheCheckpointAndFirstSeqNoLongerCovered(t *testing.T) {
	s, v := keys(t, "ops")
	g := treeLog(t, 30)
	heads := signedHeads(t, g, s, 10, 20, 30)
	trust := func(ns ...replay.NoteSource) replay.VerifyOption {
		return replay.WithTrust(&replay.Trust{LedgerID: "overlap-test", Checkpoints: ns, Verifiers: []note.Verifier{v}, Expected: true})
	}
	rep := verifyTree(t, g, trust(heads...))
	if !rep.OK || !strings.HasPrefix(rep.Trust, "seq 1-30 match checkpoint witness:2") {
		t.Fatalf("untouched: %+v, trust %q", rep.Problems, rep.Trust)
	}

	// Truncated below the last checkpoint, stored hashes and all.
	for _, q := range []string{`DROP TRIGGER events_no_delete`, `DROP TRIGGER tlog_hashes_no_delete`,
		`DELETE FROM events WHERE seq > 25`, `DELETE FROM tlog_hashes WHERE seq > 25`} {
		if _, err := g.db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	rep = verifyTree(t, g, trust(heads...))
	onlyProblem(t, rep, verify.KindCheckpoint, 26, "witness:2 (size 30, key ops)", "truncated")
	if rep.UnsignedFrom != 21 {
		t.Fatalf("unsigned from %d, want 21", rep.UnsignedFrom)
	}

	// An edited checkpoint and one signed by another key vouch for nothing.
	g = treeLog(t, 30)
	heads = signedHeads(t, g, s, 10, 20)
	edited := replay.NoteSource{Source: "checkpoint edited", Note: bytes.Replace(heads[1].Note, []byte("\n20\n"), []byte("\n21\n"), 1)}
	intruder, _ := keys(t, "ops")
	forged := signedHeads(t, g, intruder, 30)[0]
	forged.Source = "checkpoint forged"
	rep = verifyTree(t, g, trust(heads[0], edited, forged))
	if rep.OK || rep.ProblemCount != 2 {
		t.Fatalf("edited and forged: %+v", rep.Problems)
	}
	for i, w := range []string{"edited (size 21, key ops) was changed after it was signed", "forged (size 30, key ops) is not vouched for"} {
		if p := rep.Problems[i]; !strings.Contains(p.Detail, w) || p.Seq != 11 || !strings.Contains(p.Detail, "the first 10 match checkpoint witness:0") {
			t.Fatalf("problem %d: %+v, want seq 11 and %q", i, p, w)
		}
	}

	// Another ledger's checkpoint: the database was swapped.
	rep = verifyTree(t, g, replay.WithTrust(&replay.Trust{LedgerID: "another", Checkpoints: heads, Verifiers: []note.Verifier{v}}))
	onlyProblem(t, rep, verify.KindCheckpoint, 1, "names another ledger")

	// An expected head.
	var h19 string
	if err := g.db.QueryRow(`SELECT hash FROM events WHERE seq = 19`).Scan(&h19); err != nil {
		t.Fatal(err)
	}
	rep = verifyTree(t, g, replay.WithTrust(&replay.Trust{Heads: []replay.Head{{Seq: 19, Hash: h19}}}))
	if !rep.OK || rep.UnsignedFrom != 20 {
		t.Fatalf("expected head: %+v, %q", rep.Problems, rep.Trust)
	}
	rep = verifyTree(t, g, replay.WithTrust(&replay.Trust{Heads: []replay.Head{{Seq: 19, Hash: strings.Repeat("0", 64)}}}))
	onlyProblem(t, rep, verify.KindCheckpoint, 1, "expected head 19:")
}

// A full re-chain: a body rewritten and every later chain hash and stored
// hash recomputed, which no chain check can see.
func TestVerifyAgainstCheckpointsSeesAFullRechain(t *testing.T) {
	s, v := keys(t, "ops")
	g := treeLog(t, 30)
	heads := signedHeads(t, g, s, 10, 20, 30)
	rechain(t, g, func(bs []fixture.Body) []fixture.Body { bs[13]["actor"] = "someone"; return bs })
	if rep := verifyTree(t, g); !rep.OK {
		t.Fatalf("the re-chain is not consistent: %+v", rep.Problems)
	}
	rep := verifyTree(t, g, replay.WithTrust(&replay.Trust{LedgerID: "overlap-test", Checkpoints: heads, Verifiers: []note.Verifier{v}}))
	onlyProblem(t, rep, verify.KindCheckpoint, 11, "witness:1 (size 20, key ops)", "seq 11-20", "the first 10 match checkpoint witness:0")
	if rep.ProblemCount != 2 {
		t.Fatalf("%d problems: %+v", rep.ProblemCount, rep.Problems)
	}
}

// rechain rewrites the log with edit and recomputes every chain hash and
// stored hash, as an attacker with the database and no key can.
func rechain(t *testing.T, g *ovlLog, edit func([]fixture.Body) []fixture.Body) {
	t.Helper()
	for _, q := range []string{`DROP TRIGGER events_no_update`, `DROP TRIGGER events_no_delete`, `DROP TRIGGER tlog_hashes_no_update`,
		`DROP TRIGGER tlog_hashes_no_delete`} {
		if _, err := g.db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	fixture.Rechain(t, g.db, edit)
}

// A checkpoint a writer signed on its own promises the next one within
// NextEvery events or NextWithin: an event past that which no checkpoint
// covers was appended without the key; one dated before the checkpoint
// it follows was backdated.
func TestVerifyHoldsEventsToTheLastCheckpointsPromise(t *testing.T) {
	s, v := keys(t, "ops")
	g := treeLog(t, 30) // one event a second
	var at20 string
	if err := g.db.QueryRow(`SELECT at FROM events WHERE seq = 20`).Scan(&at20); err != nil {
		t.Fatal(err)
	}
	signedAt, err := events.ParseTime(at20)
	if err != nil {
		t.Fatal(err)
	}
	head := func(every int64, within time.Duration, signed time.Time) replay.VerifyOption {
		h := signedHeads(t, g, s, 20)[0]
		c, err := checkpoint.Open(h.Note, v)
		if err != nil {
			t.Fatal(err)
		}
		c.Checkpoint.Time, c.NextEvery, c.NextWithin = signed, every, within
		msg, err := checkpoint.Sign(c.Checkpoint, s)
		if err != nil {
			t.Fatal(err)
		}
		return replay.WithTrust(&replay.Trust{LedgerID: "overlap-test", Verifiers: []note.Verifier{v},
			Checkpoints: []replay.NoteSource{{Source: "checkpoint w", Note: msg}}})
	}
	// Kept: 10 events and 10 s after it, within 20 and a minute.
	if rep := verifyTree(t, g, head(20, time.Minute, signedAt)); !rep.OK || rep.UnsignedFrom != 21 {
		t.Fatalf("promise kept: %+v %q", rep.Problems, rep.Trust)
	}
	onlyProblem(t, verifyTree(t, g, head(5, time.Hour, signedAt)), verify.KindCheckpoint, 25, "within 5 events", "without the key")
	onlyProblem(t, verifyTree(t, g, head(100, 3*time.Second, signedAt)), verify.KindCheckpoint, 26, "dated 3s later", "without the key")
	// Signed a minute after event 21 was dated: 21 was backdated.
	onlyProblem(t, verifyTree(t, g, head(100, time.Hour, signedAt.Add(time.Minute))), verify.KindCheckpoint, 21, "dated back")
}
