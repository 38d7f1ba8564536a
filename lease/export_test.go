package lease

import (
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/backoff"
)

// Deadline exposes a lease's local deadline to the external tests.
func Deadline(s *Lease) time.Time { return s.deadline() }

// SetWaitBackoff makes every Wait of the test sleep d between attempts
// unless something wakes it.
func SetWaitBackoff(t *testing.T, d time.Duration) {
	old := waitRetry
	waitRetry = backoff.Backoff{Min: d, Max: d}
	t.Cleanup(func() { waitRetry = old })
}
