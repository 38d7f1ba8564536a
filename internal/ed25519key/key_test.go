package ed25519key_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/lockledger/lockledger/internal/ed25519key"
)

// check fails t unless the key from seed has crypto/ed25519's public key
// and signs msg as crypto/ed25519 does, byte for byte.
func check(t *testing.T, seed, msg []byte) {
	t.Helper()
	k, err := ed25519key.FromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	std := ed25519.NewKeyFromSeed(seed)
	if !bytes.Equal(k.Public(), std.Public().(ed25519.PublicKey)) {
		t.Fatalf("seed %x: public key %x, crypto/ed25519 %x", seed, k.Public(), std.Public())
	}
	got, want := k.Sign(msg), ed25519.Sign(std, msg)
	if !bytes.Equal(got, want) {
		t.Fatalf("seed %x, message %q: signature %x, crypto/ed25519 %x", seed, msg, got, want)
	}
	if !ed25519.Verify(k.Public(), msg, got) {
		t.Fatalf("seed %x, message %q: crypto/ed25519 does not verify the signature", seed, msg)
	}
}

// RFC 8032 section 7.1, TEST 2: the one-byte message.
func TestRFC8032(t *testing.T) {
	seed := unhex(t, "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb")
	k, err := ed25519key.FromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	if want := unhex(t, "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c"); !bytes.Equal(k.Public(), want) {
		t.Fatalf("public key %x, want %x", k.Public(), want)
	}
	want := unhex(t, "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00")
	if got := k.Sign([]byte{0x72}); !bytes.Equal(got, want) {
		t.Fatalf("signature %x, want %x", got, want)
	}
}

func TestSignsAsCryptoEd25519(t *testing.T) {
	check(t, make([]byte, 32), nil)
	check(t, bytes.Repeat([]byte{0xff}, 32), []byte("lockledger/x\n1\nAAAA\n"))
	for i := 0; i < 200; i++ {
		seed := make([]byte, 32)
		msg := make([]byte, i*7)
		rand.Read(seed)
		rand.Read(msg)
		check(t, seed, msg)
	}
}

func TestSeedLength(t *testing.T) {
	for _, n := range []int{0, 31, 33, 64} {
		if _, err := ed25519key.FromSeed(make([]byte, n)); err == nil {
			t.Errorf("a seed of %d bytes was taken", n)
		}
	}
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
