package ed25519key_test

import (
	"crypto/sha256"
	"testing"
)

// FuzzSignsAsCryptoEd25519: every input is a seed (its SHA-256) and a
// message.
func FuzzSignsAsCryptoEd25519(f *testing.F) {
	f.Add([]byte(""), []byte(""))
	f.Add([]byte("lockledger"), []byte("lockledger/root\n12\nhash\n"))
	f.Fuzz(func(t *testing.T, seed, msg []byte) {
		s := sha256.Sum256(seed)
		check(t, s[:], msg)
	})
}
