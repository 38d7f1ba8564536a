package ledger

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
)

// releaseSecretBytes is the release secret's entropy: 256 bits.
const releaseSecretBytes = 32

// maxReleaseSecret bounds what a release may present as a secret (a
// secret is 43 characters; the bound only keeps hashing cheap).
const maxReleaseSecret = 1024

// newReleaseSecret is a fresh release secret, URL-safe base64 text (no
// padding), and the SHA-256 hex of it that the ledger records.
func newReleaseSecret() (secret, sum string) {
	var b [releaseSecretBytes]byte
	rand.Read(b[:]) // crypto/rand.Read never fails (it aborts the process instead)
	secret = base64.RawURLEncoding.EncodeToString(b[:])
	return secret, releaseSecretSum(secret)
}

func releaseSecretSum(secret string) string {
	s := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(s[:])
}

// secretMatches reports whether secret is h's release secret: its SHA-256
// against the one recorded when h was acquired, compared in constant time.
// A holding recorded without one matches nothing.
func secretMatches(h *holding, secret string) bool {
	if h.secretSum == "" || secret == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(releaseSecretSum(secret)), []byte(h.secretSum)) == 1
}
