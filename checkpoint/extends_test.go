package checkpoint

import (
	"crypto/rand"
	"errors"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// TestVerifierOfVerifiesWhatItsSignerSigned: for keys whose encoding holds
// any base64 character ('+' and '/' included), the verifier NewSigner
// derives opens what the signer signed; a signer made elsewhere has none.
func TestVerifierOfVerifiesWhatItsSignerSigned(t *testing.T) {
	for range 40 {
		skey, vkey, err := GenerateKey("ops")
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewSigner(skey)
		if err != nil {
			t.Fatal(err)
		}
		v := VerifierOf(s)
		if v == nil || v.Name() != "ops" || v.KeyHash() != s.KeyHash() {
			t.Fatalf("VerifierOf(%s): %v", vkey, v)
		}
		msg, err := Sign(Checkpoint{Origin: Origin("id"), Size: 1}, s)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Open(msg, v); err != nil {
			t.Fatalf("the derived verifier of %s: %v", vkey, err)
		}
	}
	skey, _, _ := note.GenerateKey(rand.Reader, "other")
	plain, _ := note.NewSigner(skey)
	if VerifierOf(plain) != nil {
		t.Fatal("a signer NewSigner did not make has a verifier")
	}
}

func TestCheckExtendsRefusesACutOrRewrittenTree(t *testing.T) {
	honest, _ := appendBodies(t, bodies(7))
	head := func(r tlog.HashReader, n int64) Checkpoint {
		h, err := tlog.TreeHash(n, r)
		if err != nil {
			t.Fatal(err)
		}
		return Checkpoint{Origin: Origin("id"), Size: n, Root: h}
	}
	earlier := Earlier{Checkpoint: head(honest.reader(), 5), Source: "witness w"}
	if err := CheckExtends(head(honest.reader(), 7), honest.reader(), earlier); err != nil {
		t.Fatalf("an honest tree: %v", err)
	}
	if err := CheckExtends(head(honest.reader(), 5), honest.reader(), earlier); err != nil {
		t.Fatalf("the same tree: %v", err)
	}
	var ne *NotExtendedError
	err := CheckExtends(head(honest.reader(), 4), honest.reader(), earlier)
	if !errors.As(err, &ne) || ne.Err != nil || !strings.Contains(err.Error(), "fewer than the checkpoint of 5 events it signed") {
		t.Fatalf("a cut tree: %v", err)
	}
	bs := bodies(7)
	bs[2] = []byte(`{"seq":3,"type":"lock_stolen"}`)
	forged, _ := appendBodies(t, bs)
	err = CheckExtends(head(forged.reader(), 7), forged.reader(), earlier)
	var rm *RootMismatchError
	if !errors.As(err, &ne) || !errors.As(err, &rm) || rm.Size != 5 || !strings.Contains(err.Error(), "witness w") {
		t.Fatalf("a rewritten tree: %v", err)
	}
	other := Earlier{Checkpoint: Checkpoint{Origin: Origin("another"), Size: 9}, Source: "witness w"}
	if err := CheckExtends(head(forged.reader(), 7), forged.reader(), other); err != nil {
		t.Fatalf("another ledger's checkpoint: %v", err)
	}
}

// A tree that cannot be read (the database's connection cut mid-check, as
// PostgreSQL cuts a writer's transaction left idle too long on a loaded
// host) is not a tree that was rewritten: CheckExtends returns the read's
// error, not a NotExtendedError, whose words tell of a rewritten log or a
// backup put back.
func TestCheckExtendsTellsAFailedReadFromARewrittenTree(t *testing.T) {
	honest, _ := appendBodies(t, bodies(7))
	root, err := tlog.TreeHash(7, honest.reader())
	if err != nil {
		t.Fatal(err)
	}
	next := Checkpoint{Origin: Origin("id"), Size: 7, Root: root}
	five, err := tlog.TreeHash(5, honest.reader())
	if err != nil {
		t.Fatal(err)
	}
	earlier := Earlier{Checkpoint: Checkpoint{Origin: Origin("id"), Size: 5, Root: five}, Source: "witness w"}
	cut := errors.New("connection terminated")
	for after := range 8 {
		reads := 0
		failing := RowReader(func(seq int64) ([]byte, error) {
			if reads++; reads > after {
				return nil, cut
			}
			return honest.rows[seq], nil
		})
		err := CheckExtends(next, failing, earlier)
		var ne *NotExtendedError
		if reads <= after {
			continue // the check read fewer rows than that
		}
		if errors.As(err, &ne) || !errors.Is(err, cut) {
			t.Fatalf("a read that fails after %d rows: %v, want the read's error, not a NotExtendedError", after, err)
		}
	}
}

func TestMemoryKeepsTheLargestOfEachOrigin(t *testing.T) {
	var m Memory
	m.Remember(Checkpoint{Origin: "a", Size: 5})
	m.Remember(Checkpoint{Origin: "a", Size: 3})
	m.Remember(Checkpoint{Origin: "b", Size: 1})
	if e := m.Earlier("a", "here"); len(e) != 1 || e[0].Size != 5 || e[0].Source != "here" {
		t.Fatalf("a: %+v", e)
	}
	if e := m.Earlier("c", "here"); len(e) != 0 {
		t.Fatalf("c: %+v", e)
	}
	var none *Memory
	none.Remember(Checkpoint{Origin: "a", Size: 1})
	if none.Earlier("a", "") != nil {
		t.Fatal("a nil Memory remembered")
	}
}
