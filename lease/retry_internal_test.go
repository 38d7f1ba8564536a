package lease

import "testing"

func TestAwayRetriesAreJittered(t *testing.T) {
	retry := awayRetry
	for i, delay := 0, awayRetry.Min; i < 8; i, delay = i+1, min(2*delay, awayRetry.Max) {
		if got := retry.Next(); got < 0 || got >= delay {
			t.Fatalf("retry wait %d: %s, want in [0, %s) so that hosts do not retry in step", i, got, delay)
		}
	}
}
