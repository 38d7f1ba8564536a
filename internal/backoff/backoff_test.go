package backoff_test

import (
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/backoff"
)

func TestBackoffDoublesUpToMax(t *testing.T) {
	b := backoff.Backoff{Min: time.Millisecond, Max: 5 * time.Millisecond}
	j := backoff.Backoff{Min: time.Millisecond, Max: 5 * time.Millisecond, Jitter: true}
	for i, want := range []time.Duration{1, 2, 4, 5, 5} {
		if got := b.Next(); got != want*time.Millisecond {
			t.Fatalf("wait %d: %s, want %s", i, got, want*time.Millisecond)
		}
		if got := j.Next(); got < 0 || got >= want*time.Millisecond {
			t.Fatalf("jittered wait %d: %s, want in [0, %s)", i, got, want*time.Millisecond)
		}
	}
}
