package ledger

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestZZTiming(t *testing.T) {
	ctx := context.Background()
	l, _ := Open(ctx, t.TempDir())
	defer l.Close()
	var a, r time.Duration
	for i := 0; i < 300; i++ {
		s := time.Now()
		acq, _ := l.TryAcquire(ctx, AcquireRequest{Lock: "b", Identity: Identity{Actor: "x"}})
		a += time.Since(s)
		s = time.Now()
		_, _ = l.Release(ctx, ReleaseRequest{Lock: "b", Identity: Identity{RequestID: acq.RequestID, Actor: "x"}})
		r += time.Since(s)
	}
	t.Logf("acquire %v release %v", a/300, r/300)
	// fsync alone vs fsync in parallel with commit
	dir := t.TempDir()
	var f1, both time.Duration
	for i := 0; i < 200; i++ {
		p := filepath.Join(dir, "x")
		os.Remove(p)
		f, _ := os.Create(p)
		f.Write([]byte("hello"))
		s := time.Now()
		f.Sync()
		f1 += time.Since(s)
		f.Close()
	}
	t.Logf("file fsync %v", f1/200)
	_ = both
}
