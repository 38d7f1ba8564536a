package tlogwitness

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"
)

type noProofs struct{}

func (noProofs) ProveTree(context.Context, int64, int64) (tlog.TreeProof, error) {
	return nil, errors.New("no proof asked")
}

// A witness that accepts the connection and never answers holds Cosign
// no longer than the witness timeout.
func TestCosignGivesUpOnAHungWitnessAtTheTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	v, err := NewVerifier(liteVKey)
	if err != nil {
		t.Fatal(err)
	}
	w, err := New("http://"+l.Addr().String(), v, WithTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	signed := []byte(liteText + "\n\u2014 ops eiZER3keGVEwn0RzQ8UWQCSjoUN2kcfF9WlEowAhfYSUzXOMXVmcR6TBu1t+Pl/e2La88QqP+3UNYXm/Rp3AddfWRQw=\n")
	start := time.Now()
	_, err = w.Cosign(context.Background(), signed, 0, noProofs{})
	took := time.Since(start)
	if c := <-accepted; c != nil {
		c.Close()
	}
	if !errors.Is(err, context.DeadlineExceeded) || took > 5*time.Second {
		t.Fatalf("a hung witness: %v after %s, want the deadline after about 300ms", err, took)
	}
}

func TestNewRefusesWhatIsNotAWitnessURL(t *testing.T) {
	v, err := NewVerifier(liteVKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"", "witness.example", "ftp://witness.example", "http://", "http://w.example/?a=b", "http://w.example/#x"} {
		if _, err := New(u, v); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
	if w, err := New("https://w.example/lw/", v); err != nil || w.URL != "https://w.example/lw" {
		t.Fatalf("New: %+v, %v", w, err)
	}
}
