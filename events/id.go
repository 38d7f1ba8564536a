package events

import (
	"crypto/rand"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

var (
	idMu      sync.Mutex
	idEntropy *ulid.MonotonicEntropy // made on first use, not at init
)

// NewULID returns a monotonic ULID for time t.
func NewULID(t time.Time) string {
	idMu.Lock()
	defer idMu.Unlock()
	if idEntropy == nil {
		idEntropy = ulid.Monotonic(rand.Reader, 0)
	}
	return ulid.MustNew(ulid.Timestamp(t), idEntropy).String()
}

// NewRequestID returns a default request id, req_<ULID>.
func NewRequestID(t time.Time) string { return "req_" + NewULID(t) }
