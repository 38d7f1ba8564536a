package ledger

import (
	"context"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/pgtest"
)

// A writer stopped (SIGSTOP, a frozen VM) while it holds PostgreSQL's
// writer lock is, to the server, a session idle in its transaction. Another
// host's heartbeat must get through once the server has cut that session
// off (half the busy timeout), not fail with the busy timeout and lose its
// lock for as long as the stopped writer stays stopped.
func TestPostgresStoppedWriterDelaysOtherHeartbeatsOnly(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	const busy = 2 * time.Second
	// The schema is made first under the default busy timeout: on a loaded
	// machine its migrations take longer than the short one under test.
	first, err := Open(ctx, t.TempDir(), WithDatabase(url), WithHost(Host{ID: "host-holder"}), Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	open := func(host string) *Ledger {
		l, err := Open(ctx, t.TempDir(), WithDatabase(url), WithBusyTimeout(busy), WithHost(Host{ID: host}), Unsigned())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	stopped, holder := open("host-stopped"), open("host-holder")
	id := Identity{RequestID: "req_holder", Actor: "stall-test"}
	if _, err := holder.TryAcquire(ctx, AcquireRequest{Lock: "deploy", Identity: id, TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	tx, err := stopped.beginWrite(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	start := time.Now()
	if _, err := holder.Renew(ctx, RenewRequest{Lock: "deploy", Identity: id}); err != nil {
		t.Fatalf("heartbeat behind a stopped writer: %v (want it through once the server ends the stopped writer's transaction)", err)
	}
	if d := time.Since(start); d > busy {
		t.Errorf("heartbeat took %s behind the stopped writer, want at most the busy timeout %s", d, busy)
	}
	if err := tx.Commit(); err == nil {
		t.Error("the stopped writer's transaction committed after the server cut it off")
	}
}
