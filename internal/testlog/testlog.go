// Package testlog holds the one log destination that tests read while the
// code under test writes it: a ledger's or a lease's slog handler, a CLI
// process's stderr. It imports nothing of the project, so that every
// package's tests, the ledger's own included, can use it.
package testlog

import (
	"strings"
	"sync"
)

// Buffer is what was written to it so far, safe to write from one
// goroutine (or process pipe) while another reads.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
