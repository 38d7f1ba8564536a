package pgtest

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A pgbouncer that dies on its own (here SIGKILLed, as a FATAL exit
// would end it) is started again on the same port, and a client then
// gets through it to the server; Stop stops the one running then, and no
// other is started after it.
func TestBouncerIsStartedAgainWhenItDies(t *testing.T) {
	c := Private(t)
	b, err := c.StartBouncer()
	started(t, "pgbouncer", err, ErrNoBouncer)
	through := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, b.URL("postgres"))
		if err != nil {
			return err
		}
		defer conn.Close(context.Background())
		_, err = conn.Exec(ctx, "SELECT 1")
		return err
	}
	for range 2 {
		b.mu.Lock()
		first := b.srv
		b.mu.Unlock()
		if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-first.exited
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			b.mu.Lock()
			again := b.srv != first
			b.mu.Unlock()
			if again {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("pgbouncer was not started again within 30 s of its death")
			}
		}
		if err := through(); err != nil {
			t.Fatalf("through the pgbouncer started again: %v", err)
		}
	}
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.done:
	default:
		t.Fatal("the supervisor still runs after stop")
	}
	if err := through(); err == nil {
		t.Fatal("a client got through after stop: pgbouncer was started again")
	}
}
