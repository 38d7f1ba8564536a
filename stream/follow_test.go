package stream_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/stream"
)

func acquire(t *testing.T, l *ledger.Ledger, lock string) {
	t.Helper()
	if _, err := l.TryAcquire(t.Context(), ledger.AcquireRequest{Lock: lock, Identity: ledger.Identity{RequestID: "req-" + lock, PID: os.Getpid()}}); err != nil {
		t.Fatal(err)
	}
}

// A follower in this process, on a real SQLite ledger written by another
// open of it: each append arrives, woken by the database files' watch
// well before the safety re-read, and cancelling ends Follow with nil.
func TestFollowWakesOnEachAppendAndStopsOnCancel(t *testing.T) {
	root := t.TempDir()
	w, err := ledger.Open(t.Context(), root, ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	acquire(t, w, "first")
	r, err := ledger.Open(t.Context(), root, ledger.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	pr, pw := io.Pipe()
	fw, err := stream.NewWriter(stream.FormatJSONL, pw, r.ID(), "test-host")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- stream.Follow(ctx, r, fw, stream.Options{Recheck: time.Hour})
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	next := func() map[string]any {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("the stream ended: %v", lines.Err())
		}
		var m map[string]any
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := next(); m["seq"] != 1.0 {
		t.Fatalf("first record %v", m)
	}
	for i := range 3 {
		acquire(t, w, fmt.Sprintf("more-%d", i))
		if m := next(); m["seq"] != float64(i+2) || !strings.Contains(fmt.Sprint(m["body"]), fmt.Sprintf("more-%d", i)) {
			t.Fatalf("record %d: %v", i+2, m)
		}
	}
	cancel()
	go io.Copy(io.Discard, pr)
	if err := <-done; err != nil {
		t.Fatalf("Follow after cancel: %v", err)
	}
}

func TestFollowRefusesAnAfterSeqPastTheLog(t *testing.T) {
	root := t.TempDir()
	w, err := ledger.Open(t.Context(), root, ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	acquire(t, w, "only")
	fw, _ := stream.NewWriter(stream.FormatSyslog, io.Discard, w.ID(), "h")
	err = stream.Follow(t.Context(), w, fw, stream.Options{After: 5})
	if !errors.Is(err, ledger.ErrInvalid) || !strings.Contains(err.Error(), "--after-seq") {
		t.Fatalf("after seq 5 of 1: %v", err)
	}
}
