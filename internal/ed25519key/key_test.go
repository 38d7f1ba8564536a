package ed25519key_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/fips140"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
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

// The public key a caller gets is its own: changing it changes no
// signature the key makes.
func TestPublicIsACopy(t *testing.T) {
	seed := bytes.Repeat([]byte{7}, 32)
	k, err := ed25519key.FromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	p := k.Public()
	p[0] ^= 1
	check(t, seed, []byte("hello"))
	if got := k.Sign([]byte("hello")); !ed25519.Verify(ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey), []byte("hello"), got) {
		t.Fatal("a changed copy of the public key changed the key's signatures")
	}
}

// A Key that FromSeed did not make refuses to sign (its scalar is zero).
func TestAZeroKeyDoesNotSign(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("a zero Key signed")
		}
	}()
	var k ed25519key.Key
	k.Sign([]byte("x"))
}

// In FIPS 140-3 mode (set before the process starts) a key signs through
// crypto/ed25519, with the same keys and signatures.
func TestFIPSMode(t *testing.T) {
	if os.Getenv("ED25519KEY_FIPS_CHILD") == "1" {
		if !fips140.Enabled() {
			t.Fatal("GODEBUG=fips140=on did not enable FIPS 140-3 mode")
		}
		TestRFC8032(t)
		TestSignsAsCryptoEd25519(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFIPSMode$", "-test.v")
	cmd.Env = append(os.Environ(), "GODEBUG=fips140=on", "ED25519KEY_FIPS_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: TestFIPSMode")) {
		t.Fatalf("the test in FIPS mode: %v\n%s", err, out)
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
