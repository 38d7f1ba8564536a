// Package ed25519key holds an Ed25519 private key that signs as
// crypto/ed25519 does (RFC 8032, pure Ed25519; the scheme is
// deterministic, so the signatures are byte for byte the same) without
// crypto/ed25519's table of multiples of the base point. That table is
// built the first time a process multiplies the base point and costs
// 1–1.5 ms: more than the few signatures a lockledger process makes, each
// about 75 µs here with filippo.io/edwards25519's constant-time
// variable-base multiplication.
package ed25519key

import (
	"crypto/ed25519"
	"crypto/sha512"
	"errors"

	"filippo.io/edwards25519"
)

// Key is an Ed25519 private key.
type Key struct {
	s      edwards25519.Scalar // the secret scalar
	prefix [32]byte            // the seed hash's second half, for the nonce
	pub    [ed25519.PublicKeySize]byte
}

// FromSeed is the key of an RFC 8032 private key (its 32-byte seed), as
// crypto/ed25519.NewKeyFromSeed reads one.
func FromSeed(seed []byte) (*Key, error) {
	if len(seed) != ed25519.SeedSize {
		return nil, errors.New("ed25519key: the seed is not 32 bytes")
	}
	h := sha512.Sum512(seed)
	k := &Key{}
	if _, err := k.s.SetBytesWithClamping(h[:32]); err != nil {
		return nil, err
	}
	copy(k.prefix[:], h[32:])
	copy(k.pub[:], base(&k.s).Bytes())
	return k, nil
}

// Public is the key's public key.
func (k *Key) Public() ed25519.PublicKey { return ed25519.PublicKey(k.pub[:]) }

// Sign is the signature of msg (RFC 8032 section 5.1.6).
func (k *Key) Sign(msg []byte) []byte {
	h := sha512.New()
	h.Write(k.prefix[:])
	h.Write(msg)
	r, err := edwards25519.NewScalar().SetUniformBytes(h.Sum(nil))
	if err != nil {
		panic("ed25519key: " + err.Error()) // a SHA-512 sum is 64 bytes
	}
	R := base(r).Bytes()

	h.Reset()
	h.Write(R)
	h.Write(k.pub[:])
	h.Write(msg)
	c, err := edwards25519.NewScalar().SetUniformBytes(h.Sum(nil))
	if err != nil {
		panic("ed25519key: " + err.Error())
	}
	S := edwards25519.NewScalar().MultiplyAdd(c, &k.s, r)

	sig := make([]byte, 0, ed25519.SignatureSize)
	return append(append(sig, R...), S.Bytes()...)
}

// base is x times the base point, by the constant-time variable-base
// multiplication (Point.ScalarBaseMult would build the table this package
// exists to avoid).
func base(x *edwards25519.Scalar) *edwards25519.Point {
	return new(edwards25519.Point).ScalarMult(x, edwards25519.NewGeneratorPoint())
}
