package replay

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// chainHasher answers hash == events.ChainHash(seq, prev_hash, body)
// without allocating once warm: one per goroutine, reused for every row.
// TestChainHasherMatchesEvents holds it to events.ChainHash.
type chainHasher struct {
	buf []byte
	hex [2 * sha256.Size]byte
}

// matches reports whether want is hex(sha256(decimal(seq) "\n" prev "\n" body)).
func (c *chainHasher) matches(seq int64, prev string, body []byte, want string) bool {
	if len(want) != len(c.hex) {
		return false
	}
	b := strconv.AppendInt(c.buf[:0], seq, 10)
	b = append(b, '\n')
	b = append(b, prev...)
	b = append(b, '\n')
	b = append(b, body...)
	c.buf = b
	sum := sha256.Sum256(b)
	hex.Encode(c.hex[:], sum[:])
	return string(c.hex[:]) == want
}
