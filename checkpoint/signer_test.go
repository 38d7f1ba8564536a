package checkpoint

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
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
	if k, err := VerifierKey(skey); err != nil || k != vkey {
		t.Fatalf("VerifierKey = %q, %v, want %q", k, err, vkey)
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
