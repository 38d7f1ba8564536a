// Package ed25519key holds an Ed25519 private key that signs as
// crypto/ed25519 does (RFC 8032, pure Ed25519; the scheme is
// deterministic, so the signatures are byte for byte the same) without
// crypto/ed25519's table of multiples of the base point. crypto/ed25519
// builds that table on a process's first multiplication of the base point
// (loading a key) and it costs 1–1.5 ms: more than the few signatures a
// lockledger process makes, each about 75 µs with filippo.io/edwards25519's
// constant-time variable-base multiplication.
//
// In FIPS 140-3 mode (GODEBUG=fips140=on or only) a key signs with
// crypto/ed25519, inside the Go Cryptographic Module, as before.
package ed25519key

import (
	"crypto/ed25519"
	"crypto/fips140"
	"crypto/sha512"
	"errors"

	"filippo.io/edwards25519"
)

// Key is an Ed25519 private key; only FromSeed makes one.
type Key struct {
	s      edwards25519.Scalar // the secret scalar
	prefix [32]byte            // the seed hash's second half, for the nonce
	pub    [ed25519.PublicKeySize]byte
	// fips: the key of crypto/ed25519 that signs in FIPS 140-3 mode.
	fips ed25519.PrivateKey
}

// FromSeed is the key of an RFC 8032 private key (its 32-byte seed), as
// crypto/ed25519.NewKeyFromSeed reads one.
func FromSeed(seed []byte) (*Key, error) {
	if len(seed) != ed25519.SeedSize {
		return nil, errors.New("ed25519key: the seed is not 32 bytes")
	}
	k := &Key{}
	if fips140.Enabled() {
		k.fips = ed25519.NewKeyFromSeed(seed)
		copy(k.pub[:], k.fips.Public().(ed25519.PublicKey))
		return k, nil
	}
	h := sha512.Sum512(seed)
	if _, err := k.s.SetBytesWithClamping(h[:32]); err != nil {
		return nil, err
	}
	copy(k.prefix[:], h[32:])
	copy(k.pub[:], base(&k.s).Bytes())
	return k, nil
}

// Public is a copy of the key's public key.
func (k *Key) Public() ed25519.PublicKey {
	return ed25519.PublicKey(append([]byte(nil), k.pub[:]...))
}

// Sign is the signature of msg (RFC 8032 section 5.1.6).
func (k *Key) Sign(msg []byte) []byte {
	// FromSeed gives every key its public key, never the zero bytes (the
	// encoding of a point of order 4, which no clamped scalar reaches).
	if k.pub == [ed25519.PublicKeySize]byte{} {
		panic("ed25519key: Sign of a Key that FromSeed did not make")
	}
	if k.fips != nil {
		return ed25519.Sign(k.fips, msg)
	}
	r := hashScalar(k.prefix[:], msg)
	R := base(r).Bytes()
	c := hashScalar(R, k.pub[:], msg)
	S := edwards25519.NewScalar().MultiplyAdd(c, &k.s, r)

	sig := make([]byte, 0, ed25519.SignatureSize)
	return append(append(sig, R...), S.Bytes()...)
}

// hashScalar is SHA-512 of the parts, reduced modulo the group's order.
func hashScalar(parts ...[]byte) *edwards25519.Scalar {
	h := sha512.New()
	for _, p := range parts {
		h.Write(p)
	}
	x, err := edwards25519.NewScalar().SetUniformBytes(h.Sum(nil))
	if err != nil {
		panic("ed25519key: " + err.Error()) // a SHA-512 sum is 64 bytes
	}
	return x
}

// base is x times the base point, by the constant-time variable-base
// multiplication (Point.ScalarBaseMult would build a table as
// crypto/ed25519 does).
func base(x *edwards25519.Scalar) *edwards25519.Point {
	return new(edwards25519.Point).ScalarMult(x, edwards25519.NewGeneratorPoint())
}
