package ed25519key_test

import "testing"

func FuzzSignsAsCryptoEd25519(f *testing.F) {
	f.Add(make([]byte, 32), []byte(""))
	f.Add([]byte("0123456789abcdef0123456789abcdef"), []byte("lockledger/root\n12\nhash\n"))
	f.Fuzz(func(t *testing.T, seed, msg []byte) {
		if len(seed) != 32 {
			return
		}
		check(t, seed, msg)
	})
}
