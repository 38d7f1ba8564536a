package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/lockledger/lockledger/ledger"
)

// A service holds a lock while it works: heartbeats run in the background,
// Lost says when the lock is gone, and Release records the result.
func ExampleLedger_Acquire() {
	root, _ := os.MkdirTemp("", "lockledger-example")
	defer os.RemoveAll(root)
	ctx := context.Background()

	l, err := ledger.Open(ctx, root)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	lease, err := l.Acquire(ctx, "nightly-etl", ledger.WithTTL(30*time.Second), ledger.WithActor("etl-service"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("holding", lease.Lock(), "with fencing token", lease.FencingToken())

	// A second caller is refused while the lease is held.
	_, err = l.Acquire(ctx, "nightly-etl", ledger.WithActor("other"))
	var held *ledger.HeldError
	if errors.As(err, &held) {
		fmt.Println("blocked by", held.Holder.Actor)
	}

	select {
	case <-lease.Lost():
		log.Fatal("lock lost: stop working", lease.Err())
	default: // do the work, checking Lost between steps
	}
	if err := lease.Release(ctx, ledger.Result{Result: "success"}); err != nil {
		log.Fatal(err)
	}
	fmt.Println("released")
	// Output:
	// holding nightly-etl with fencing token 1
	// blocked by etl-service
	// released
}
