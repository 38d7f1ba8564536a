package fence_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/fence"
)

func TestCheck(t *testing.T) {
	if err := fence.Check("r", 5, 5); err != nil {
		t.Fatalf("equal: %v", err)
	}
	if err := fence.Check("r", 6, 5); err != nil {
		t.Fatalf("higher: %v", err)
	}
	err := fence.Check("r", 4, 5)
	var stale *fence.StaleError
	if !errors.As(err, &stale) || !errors.Is(err, fence.ErrStale) || stale.Token != 4 || stale.Current != 5 || stale.Fence != events.FenceCheck {
		t.Fatalf("lower: %v", err)
	}
}

// Fence.Do runs a write only for a token not below the highest admitted,
// advances on success only, and serialises: concurrent holders never see
// a lower token's write run after a higher one's.
func TestFenceDoRefusesLowerTokensAndSerialises(t *testing.T) {
	f := fence.NewFence("orders", 3)
	ran := false
	if err := f.Do(2, func() error { ran = true; return nil }); !errors.Is(err, fence.ErrStale) || ran {
		t.Fatalf("token 2 after 3: %v, ran %v", err, ran)
	}
	failed := errors.New("disk full")
	if err := f.Do(9, func() error { return failed }); !errors.Is(err, failed) || f.Current() != 3 {
		t.Fatalf("failed write: %v, current %d, want 3", err, f.Current())
	}
	if err := f.Admit(3); err != nil {
		t.Fatalf("equal: %v", err)
	}

	var (
		mu   sync.Mutex
		seen []int64
		wg   sync.WaitGroup
	)
	for tok := int64(4); tok < 40; tok++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = f.Do(tok, func() error {
				mu.Lock()
				seen = append(seen, tok)
				mu.Unlock()
				return nil
			})
		}()
	}
	wg.Wait()
	for i := 1; i < len(seen); i++ {
		if seen[i] < seen[i-1] {
			t.Fatalf("token %d's write ran after token %d's: %v", seen[i], seen[i-1], seen)
		}
	}
	if f.Current() != seen[len(seen)-1] {
		t.Fatalf("current %d, last write %d", f.Current(), seen[len(seen)-1])
	}
}
