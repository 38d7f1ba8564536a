// Package testwitness holds the one witness that never answers, which
// tests point a ledger (ledger.WithWitness) or the CLI (--witness-url) at
// to show that a hung witness holds up nothing else. It imports nothing of
// the project, so that every package's tests, the ledger's own included,
// can use it.
package testwitness

import (
	"net"
	"sync"
	"testing"
)

// Silent is a TCP listener that accepts connections and never answers: a
// witness that hangs every request sent to it, until Stop or the end of
// the test.
type Silent struct {
	// URL is the witness's address, http://127.0.0.1:PORT.
	URL      string
	l        net.Listener
	mu       sync.Mutex
	conns    []net.Conn // held unanswered
	accepted int
	done     chan struct{}
}

// StartSilent starts a Silent witness, stopped when the test ends.
func StartSilent(t testing.TB) *Silent {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Silent{URL: "http://" + l.Addr().String(), l: l, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.accepted++
			s.mu.Unlock()
		}
	}()
	t.Cleanup(s.Stop)
	return s
}

// Accepted is how many requests the witness was sent (held unanswered
// until Stop).
func (s *Silent) Accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted
}

// Stop refuses new connections, then drops the ones held: every request
// under way fails at once.
func (s *Silent) Stop() {
	s.l.Close()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
	s.conns = nil
}
