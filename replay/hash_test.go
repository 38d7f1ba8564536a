package replay

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/events"
)

// TestChainHasherMatchesEvents: verify's hash check is events.ChainHash.
func TestChainHasherMatchesEvents(t *testing.T) {
	h := new(chainHasher)
	rng := rand.New(rand.NewPCG(3, 4))
	seqs := []int64{0, 1, -1, 9, 10, 123456789, math.MaxInt64, math.MinInt64}
	prevs := []string{"", "x", events.Genesis("l"), strings.Repeat("ab", 40), strings.Repeat("é", 50)}
	for i := 0; i < 2000; i++ {
		seq := seqs[i%len(seqs)]
		if i >= len(seqs)*len(prevs) {
			seq = rng.Int64() - rng.Int64()
		}
		prev := prevs[(i/len(seqs))%len(prevs)]
		body := make([]byte, rng.IntN(700))
		for j := range body {
			body[j] = byte(rng.IntN(256))
		}
		want := events.ChainHash(seq, prev, body)
		if !h.matches(seq, prev, body, want) {
			t.Fatalf("seq %d prev %q body %q: events.ChainHash %s not matched", seq, prev, body, want)
		}
		bad := []byte(want)
		bad[rng.IntN(len(bad))] ^= 1
		if h.matches(seq, prev, body, string(bad)) || h.matches(seq, prev, body, want[:63]) || h.matches(seq, prev, body, strings.ToUpper(want)) && strings.ToUpper(want) != want {
			t.Fatalf("seq %d: a wrong hash matched", seq)
		}
	}
}

// TestDecoderWordScan: decodeFast's eight-bytes-at-a-time string scan
// never misses a byte that needs attention, and flags nothing plain.
func TestDecoderWordScan(t *testing.T) {
	special := func(c byte) bool { return c < 0x20 || c == '"' || c == '\\' || c >= 0x80 }
	for pos := range 8 {
		for c := range 256 {
			w := []byte("aaaaaaaaa")
			w[pos+1] = byte(c)
			if got := mayBeSpecial(load64(string(w), 1)); got != special(byte(c)) {
				t.Fatalf("byte %#x at %d: %v", c, pos, got)
			}
		}
	}
}
