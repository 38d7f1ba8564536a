package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// NewSigner derives the public key once and signs as note's own signer
// does, byte for byte; what it refuses, note refuses too.
func TestNewSignerSignsAsNoteDoesAndKnowsItsVerifierKey(t *testing.T) {
	skey, vkey, err := GenerateKey("alice@host")
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSigner(skey + "\n")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name() != ref.Name() || s.KeyHash() != ref.KeyHash() {
		t.Fatalf("name/hash %s/%08x, note's %s/%08x", s.Name(), s.KeyHash(), ref.Name(), ref.KeyHash())
	}
	msg := Checkpoint{Origin: Origin("l1"), Size: 3}.Text()
	got, _ := s.Sign(msg)
	want, _ := ref.Sign(msg)
	if !bytes.Equal(got, want) {
		t.Fatal("the signature differs from note's signer's")
	}
	if k := VerifierKeyOf(s); k != vkey {
		t.Fatalf("VerifierKeyOf = %q, want %q", k, vkey)
	}
	if VerifierKeyOf(ref) != "" || VerifierOf(ref) != nil {
		t.Fatal("a signer NewSigner did not make has a verifier")
	}

	parts := strings.SplitN(strings.TrimPrefix(skey, SignerKeyPrefix), "+", 3)
	otherHash := "00000000"
	if parts[1] == otherHash {
		otherHash = "00000001"
	}
	for name, bad := range map[string]string{
		"wrong hash":    SignerKeyPrefix + parts[0] + "+" + otherHash + "+" + parts[2],
		"short hash":    SignerKeyPrefix + parts[0] + "+" + parts[1][1:] + "+" + parts[2],
		"no prefix":     strings.TrimPrefix(skey, "PRIVATE+"),
		"verifier key":  vkey,
		"name with tab": SignerKeyPrefix + "a\tb+" + parts[1] + "+" + parts[2],
		"bad base64":    SignerKeyPrefix + parts[0] + "+" + parts[1] + "+" + parts[2][1:],
		"empty":         "",
	} {
		if _, err := NewSigner(bad); err == nil {
			t.Errorf("%s: NewSigner accepted %q", name, bad)
		}
		if _, err := note.NewSigner(bad); err == nil {
			t.Errorf("%s: note.NewSigner accepts %q: the case tests nothing", name, bad)
		}
	}
}

// The signer's verifier accepts what note's Ed25519 verifier of its key
// accepts of what lockledger signs, and nothing else: a changed text or
// signature, or another key's note under the same name.
func TestVerifierOfAgreesWithTheKeysVerifier(t *testing.T) {
	skey, vkey, err := GenerateKey("bob")
	if err != nil {
		t.Fatal(err)
	}
	otherKey, _, err := GenerateKey("bob")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := NewSigner(skey)
	other, _ := NewSigner(otherKey)
	good, err := Sign(Checkpoint{Origin: Origin("l1"), Size: 7}, signer)
	if err != nil {
		t.Fatal(err)
	}
	byOther, _ := Sign(Checkpoint{Origin: Origin("l1"), Size: 7}, other)
	changedText := bytes.Replace(good, []byte("\n7\n"), []byte("\n8\n"), 1)
	changedSig := append([]byte(nil), good...)
	changedSig[len(changedSig)-3] ^= 'A' ^ 'B'
	if bytes.Equal(changedSig, good) {
		changedSig[len(changedSig)-3] = 'C'
	}
	notes := map[string][]byte{"good": good, "by another key": byOther, "changed text": changedText, "changed signature": changedSig}
	for name, msg := range notes {
		_, refErr := note.Open(msg, note.VerifierList(ref))
		_, err := note.Open(msg, note.VerifierList(VerifierOf(signer)))
		if (err == nil) != (refErr == nil) {
			t.Errorf("%s: the signer's verifier says %v, the key's verifier %v", name, err, refErr)
		}
		if name == "good" && err != nil {
			t.Errorf("a note the key signed does not open: %v", err)
		}
	}
	if _, ok := SignedBy(good, signer, Origin("l1"), 7); ok {
		t.Error("SignedBy accepted a checkpoint without a time line")
	}
}

// A fixed key signs a fixed checkpoint to the same note, byte for byte,
// whatever implements the signing: Ed25519 is deterministic, so a head
// signed before and after a change of signing code is the same file and
// earlier witnesses' copies still match (SignedBy).
func TestAFixedKeySignsAFixedCheckpointToTheSameBytes(t *testing.T) {
	const (
		skey = "PRIVATE+KEY+fixed@host+12ffded2+Ac8w6mQ/xz1y4iAb41gIKCYdXv3QWWGGLB10J67GF9k5"
		vkey = "fixed@host+12ffded2+ATwxR+lbnN22HkWQHw6j5mGzZ0A62j4t4qMpM0Nhjwpr"
		want = "lockledger/l1\n42\nSBNJTRN+FjG7owHVrKtue7eqdM4RhdRWVl71HXN2d7I=\ntime 2026-01-02T03:04:05Z\nnext 100 1h0m0s\n\n" +
			"\u2014 fixed@host Ev/e0uEuKRLgN1r/mvLHoaLnx/uiqchyzwLOHOc5H2oJ7jvBfWgUnrbr+DKoNcaEY+MCs7j+PoR+TqIdIby4wk8/NAk=\n"
	)
	s, err := NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	if got := VerifierKeyOf(s); got != vkey {
		t.Fatalf("verifier key %q, want %q", got, vkey)
	}
	c := Checkpoint{
		Origin: Origin("l1"), Size: 42, Root: tlog.Hash(sha256.Sum256([]byte("root"))),
		Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), NextEvery: 100, NextWithin: time.Hour,
	}
	got, err := Sign(c, s)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("signed note\n%q\nwant\n%q", got, want)
	}
	v, err := NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(got, v); err != nil {
		t.Fatalf("the key's verifier does not open the note: %v", err)
	}
}
