package backoff_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/backoff"
)

func TestBackoffDoublesUpToMax(t *testing.T) {
	b := backoff.Backoff{Min: time.Millisecond, Max: 5 * time.Millisecond}
	for i, want := range []time.Duration{1, 2, 4, 5, 5} {
		if got := b.Next(); got != want*time.Millisecond {
			t.Fatalf("wait %d: %s, want %s", i, got, want*time.Millisecond)
		}
	}
	j := backoff.Backoff{Min: time.Millisecond, Max: 4 * time.Millisecond, Jitter: true}
	for i, ceil := range []time.Duration{1, 2, 4, 4} {
		if got := j.Next(); got < 0 || got >= ceil*time.Millisecond {
			t.Fatalf("jittered wait %d: %s, want in [0, %s)", i, got, ceil*time.Millisecond)
		}
	}
}

func TestSleepEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := backoff.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep on a cancelled context: %v", err)
	}
}
