package ledger

import (
	"context"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/pgtest"
)

// A waiter on PostgreSQL sleeps until a NOTIFY for its lock, not for its
// whole backoff: here the backoff is an hour.
func TestPostgresWaiterIsWokenByTheReleaseNotification(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	holder, err := Open(ctx, t.TempDir(), WithDatabase(url), WithHost(Host{ID: "holder"}), Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	waiter, err := Open(ctx, t.TempDir(), WithDatabase(url), WithHost(Host{ID: "waiter"}), Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close()
	if _, err := holder.TryAcquire(ctx, AcquireRequest{Lock: "n", Identity: Identity{RequestID: "r1"}}); err != nil {
		t.Fatal(err)
	}
	w := waiter.store.Watch("n")
	defer w.Close()
	// The first wait connects and listens; a notification for another
	// lock does not end it.
	w.Wait(ctx, 10*time.Millisecond)
	if _, err := holder.TryAcquire(ctx, AcquireRequest{Lock: "other", Identity: Identity{RequestID: "r2"}}); err != nil {
		t.Fatal(err)
	}
	woke := make(chan struct{})
	go func() {
		defer close(woke)
		w.Wait(ctx, time.Hour)
	}()
	if _, err := holder.Release(ctx, ReleaseRequest{Lock: "n", Identity: Identity{RequestID: "r1"}}); err != nil {
		t.Fatal(err)
	}
	<-woke
	if ctx.Err() != nil {
		t.Fatal("the waiter slept through the release: no notification reached it")
	}
}
