package testclock_test

import (
	"sync"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/testclock"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestClockMovesOnlyWhenTold(t *testing.T) {
	c := testclock.New(t0)
	if got := c.Now(); !got.Equal(t0) {
		t.Fatalf("Now: %v, want %v", got, t0)
	}
	if got := c.Now(); !got.Equal(t0) {
		t.Fatalf("a second reading moved the clock: %v", got)
	}
	if got := c.Add(-time.Second); !got.Equal(t0.Add(-time.Second)) || !c.Now().Equal(got) {
		t.Fatalf("Add(-1s): %v, Now %v", got, c.Now())
	}
	c.Set(t0.Add(time.Hour))
	if got := c.Now(); !got.Equal(t0.Add(time.Hour)) {
		t.Fatalf("after Set: %v", got)
	}
}

func TestSteppingClockMovesOnEveryReading(t *testing.T) {
	c := testclock.New(t0).Stepping(time.Minute)
	for i := 1; i <= 3; i++ {
		if got, want := c.Now(), t0.Add(time.Duration(i)*time.Minute); !got.Equal(want) {
			t.Fatalf("reading %d: %v, want %v", i, got, want)
		}
	}
}

// The ledger reads its clock from many goroutines while the test moves
// it: no reading or move is lost (and -race finds no race).
func TestClockIsSafeForConcurrentUse(t *testing.T) {
	c := testclock.New(t0)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				c.Add(time.Millisecond)
				c.Now()
			}
		}()
	}
	wg.Wait()
	if got, want := c.Now(), t0.Add(800*time.Millisecond); !got.Equal(want) {
		t.Fatalf("after 800 moves of 1ms: %v, want %v", got, want)
	}
}
