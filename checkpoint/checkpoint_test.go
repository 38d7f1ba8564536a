package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// store is tlog's stored hashes kept the way the ledger keeps them: one
// row per event.
type store struct{ rows map[int64][]byte }

func (s *store) reader() tlog.HashReader {
	return RowReader(func(seq int64) ([]byte, error) { return s.rows[seq], nil })
}

// appendBodies stores each body as tlog.StoredHashes gives it and returns
// the plain list of stored hashes too (tlog's own indexing), for reference.
func appendBodies(t *testing.T, bodies [][]byte) (*store, []tlog.Hash) {
	t.Helper()
	s := &store{rows: map[int64][]byte{}}
	var flat []tlog.Hash
	flatReader := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = flat[x]
		}
		return out, nil
	})
	for i, b := range bodies {
		seq := int64(i + 1)
		hs, err := tlog.StoredHashes(Index(seq), b, s.reader())
		if err != nil {
			t.Fatal(err)
		}
		ref, err := tlog.StoredHashes(Index(seq), b, flatReader)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(hs) != fmt.Sprint(ref) {
			t.Fatalf("seq %d: row layout reads other hashes than tlog's indexing", seq)
		}
		if int64(len(flat)) != tlog.StoredHashIndex(0, Index(seq)) {
			t.Fatalf("seq %d: stored from %d, tlog says %d", seq, len(flat), tlog.StoredHashIndex(0, Index(seq)))
		}
		if len(hs) != RowLen(seq) {
			t.Fatalf("seq %d: %d hashes, RowLen says %d", seq, len(hs), RowLen(seq))
		}
		flat = append(flat, hs...)
		s.rows[seq] = JoinRow(hs)
	}
	return s, flat
}

func bodies(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte(fmt.Sprintf(`{"seq":%d,"type":"lock_heartbeat"}`, i+1))
	}
	return out
}

func TestRowOfPlacesEveryStoredHash(t *testing.T) {
	_, flat := appendBodies(t, bodies(300))
	s, _ := appendBodies(t, bodies(300))
	for idx := range int64(len(flat)) {
		seq, pos := RowOf(idx)
		hs, err := hashesOf([]int64{idx}, s.rows)
		if err != nil {
			t.Fatal(err)
		}
		if hs[0] != flat[idx] {
			t.Fatalf("index %d: row %d position %d holds another hash", idx, seq, pos)
		}
	}
}

func TestTreeMatchesTlogAtEverySize(t *testing.T) {
	bs := bodies(257)
	s, _ := appendBodies(t, bs)
	var tr Tree
	for i, b := range bs {
		seq := int64(i + 1)
		hs, err := tr.Append(LeafHash(b))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(JoinRow(hs), s.rows[seq]) {
			t.Fatalf("seq %d: the streaming tree stores other hashes than tlog.StoredHashes", seq)
		}
		got, err := tr.Root()
		if err != nil {
			t.Fatal(err)
		}
		want, err := tlog.TreeHash(seq, s.reader())
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("size %d: root %s, tlog.TreeHash %s", seq, got, want)
		}
		// A tree restarted from this frontier goes on identically.
		if seq == 100 {
			again, err := NewTreeAt(seq, tr.Frontier())
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range bs[seq:] {
				if _, err := again.Append(LeafHash(b)); err != nil {
					t.Fatal(err)
				}
			}
			r1, _ := again.Root()
			r2, _ := tlog.TreeHash(int64(len(bs)), s.reader())
			if r1 != r2 {
				t.Fatal("a tree restarted from its frontier reaches another root")
			}
		}
	}
}

func TestCheckpointTextIsFormatTreeWithTheOrigin(t *testing.T) {
	root := tlog.RecordHash([]byte("x"))
	c := Checkpoint{Origin: Origin("0123abcd"), Size: 42, Root: root}
	text := c.Text()
	want := "lockledger/0123abcd\n" + strings.TrimPrefix(string(tlog.FormatTree(tlog.Tree{N: 42, Hash: root})), "go.sum database tree\n")
	if string(text) != want {
		t.Fatalf("text %q, want %q", text, want)
	}
	back, err := ParseText(text)
	if err != nil || back != c {
		t.Fatalf("parsed back %+v, %v", back, err)
	}
	if back.LedgerID() != "0123abcd" {
		t.Fatalf("ledger id %q", back.LedgerID())
	}
	c.Time = time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	back, err = ParseText(c.Text())
	if err != nil || back != c {
		t.Fatalf("with time: parsed back %+v, %v", back, err)
	}
	c.NextEvery, c.NextWithin = 1000, 90*time.Second
	back, err = ParseText(c.Text())
	if err != nil || back != c || !strings.HasSuffix(string(c.Text()), "\nnext 1000 1m30s\n") {
		t.Fatalf("with next: parsed back %+v, %v from %q", back, err, c.Text())
	}
	// Unknown extension lines are ignored; a malformed size or hash is not.
	if _, err := ParseText(append(c.Text(), "other extension\n"...)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "o\n", "o\nx\n" + root.String() + "\n", "o\n1\nnot-base64\n", "o\n01\n" + root.String() + "\n"} {
		if _, err := ParseText([]byte(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseText(%q): %v, want ErrMalformed", bad, err)
		}
	}
}

func keyPair(t *testing.T, name string) (note.Signer, note.Verifier) {
	t.Helper()
	skey, vkey, err := GenerateKey(name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return s, v
}

func TestSignedCheckpointOpensOnlyWithItsKeyAndUnchanged(t *testing.T) {
	s, v := keyPair(t, "ops")
	_, other := keyPair(t, "intruder")
	c := Checkpoint{Origin: Origin("ab"), Size: 7, Root: tlog.RecordHash([]byte("r")), Time: time.Unix(1e9, 0).UTC()}
	msg, err := Sign(c, s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Open(msg, v)
	if err != nil {
		t.Fatal(err)
	}
	if got.Checkpoint != c || got.KeyName() != "ops" {
		t.Fatalf("opened %+v", got)
	}
	var se *SignatureError
	if _, err := Open(msg, other); !errors.As(err, &se) || se.Invalid || len(se.Signers) != 1 || se.Signers[0] != "ops" {
		t.Fatalf("opened with another key: %v", err)
	}
	edited := bytes.Replace(msg, []byte("\n7\n"), []byte("\n8\n"), 1)
	if _, err := Open(edited, v); !errors.As(err, &se) || !se.Invalid {
		t.Fatalf("edited size: %v", err)
	}
	// Without verifiers the note is read, not vouched for.
	got, err = Open(msg)
	if err != nil || len(got.Keys) != 0 || got.KeyName() != "ops" {
		t.Fatalf("unverified open: %+v, %v", got, err)
	}
	if _, _, err := GenerateKey("has space"); err == nil {
		t.Fatal("a key name with a space was accepted")
	}
}

func TestSplitNotesFindsEachCheckpointOfAWitnessFile(t *testing.T) {
	s, v := keyPair(t, "ops")
	var file []byte
	var want []int64
	for size := int64(1); size <= 3; size++ {
		msg, err := Sign(Checkpoint{Origin: Origin("ab"), Size: size, Root: tlog.RecordHash([]byte{byte(size)})}, s)
		if err != nil {
			t.Fatal(err)
		}
		file = append(file, msg...)
		want = append(want, size)
	}
	entries := SplitNotes(file)
	if len(entries) != 3 {
		t.Fatalf("%d entries", len(entries))
	}
	for i, e := range entries {
		c, err := Open(e.Note, v)
		if err != nil || c.Size != want[i] {
			t.Fatalf("entry %d (line %d): %+v, %v", i, e.Line, c, err)
		}
	}
	if entries[1].Line != 6 {
		t.Fatalf("second note starts on line %d, want 6", entries[1].Line)
	}
}

func TestInclusionProofChecksWithTlogCheckRecord(t *testing.T) {
	bs := bodies(1000)
	st, _ := appendBodies(t, bs)
	r := st.reader()
	root, err := tlog.TreeHash(1000, r)
	if err != nil {
		t.Fatal(err)
	}
	c := Checkpoint{Origin: Origin("ab"), Size: 1000, Root: root}
	for _, seq := range []int64{1, 2, 500, 999, 1000} {
		p, err := ProveInclusion(seq, c, r)
		if err != nil {
			t.Fatal(err)
		}
		// tlog's own checker, with nothing of ours in between.
		if err := tlog.CheckRecord(p, 1000, root, seq-1, tlog.RecordHash(bs[seq-1])); err != nil {
			t.Fatalf("seq %d: tlog.CheckRecord: %v", seq, err)
		}
		if err := tlog.CheckRecord(p, 1000, root, seq-1, tlog.RecordHash([]byte("forged"))); err == nil {
			t.Fatalf("seq %d: a forged leaf checks", seq)
		}
	}
	if _, err := ProveInclusion(1001, c, r); !errors.Is(err, ErrTooSmall) {
		t.Fatalf("seq beyond the checkpoint: %v", err)
	}
	var rm *RootMismatchError
	if _, err := ProveInclusion(3, Checkpoint{Size: 1000, Root: tlog.RecordHash(nil)}, r); !errors.As(err, &rm) {
		t.Fatalf("against another root: %v", err)
	}
}

func TestProofsRoundTripTheirFormsAndCheck(t *testing.T) {
	s, v := keyPair(t, "ops")
	_, other := keyPair(t, "intruder")
	bs := bodies(300)
	st, _ := appendBodies(t, bs)
	r := st.reader()
	head := func(n int64) (Checkpoint, string) {
		h, err := tlog.TreeHash(n, r)
		if err != nil {
			t.Fatal(err)
		}
		c := Checkpoint{Origin: Origin("ab"), Size: n, Root: h}
		msg, err := Sign(c, s)
		if err != nil {
			t.Fatal(err)
		}
		return c, string(msg)
	}
	oldC, oldN := head(100)
	newC, newN := head(300)
	rp, err := ProveInclusion(42, newC, r)
	if err != nil {
		t.Fatal(err)
	}
	inc := &InclusionProof{Origin: newC.Origin, Seq: 42, LeafIndex: 41, TreeSize: 300, RootHash: newC.Root,
		LeafHash: LeafHash(bs[41]), AuditPath: rp, Body: json.RawMessage(bs[41]), Checkpoint: newN}
	tp, err := ProveConsistency(oldC, newC, r)
	if err != nil {
		t.Fatal(err)
	}
	con := &ConsistencyProof{Origin: newC.Origin, First: 100, Second: 300, FirstRoot: oldC.Root, SecondRoot: newC.Root,
		Consistency: tp, OldCheckpoint: oldN, NewCheckpoint: newN}
	for _, p := range []interface {
		Text() ([]byte, error)
	}{inc, con} {
		text, err := p.Text()
		if err != nil {
			t.Fatal(err)
		}
		js, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, form := range [][]byte{text, js} {
			back, err := ParseProof(form)
			if err != nil {
				t.Fatalf("%s: %v", form, err)
			}
			switch b := back.(type) {
			case *InclusionProof:
				if _, err := b.Check(v); err != nil {
					t.Fatal(err)
				}
				if _, err := b.Check(other); err == nil {
					t.Fatal("an inclusion proof checks under another key")
				}
				b.LeafHash = LeafHash([]byte("forged"))
				if _, err := b.Check(v); err == nil {
					t.Fatal("an inclusion proof of a forged leaf checks")
				}
			case *ConsistencyProof:
				if _, _, err := b.Check(v); err != nil {
					t.Fatal(err)
				}
				b.Consistency[0][0] ^= 1
				if _, _, err := b.Check(v); err == nil {
					t.Fatal("an altered consistency proof checks")
				}
			default:
				t.Fatalf("parsed %T", back)
			}
		}
	}
	if _, err := ParseProof([]byte("hello\n")); !errors.Is(err, ErrNotAProof) {
		t.Fatalf("not a proof: %v", err)
	}
}
