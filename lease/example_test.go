package lease_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/lockledger/lockledger/lease"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/trust"
)

// A service holds a lock while it works: heartbeats run in the background,
// Lost says when the lock is gone, and Release records the result.
func ExampleAcquire() {
	root, _ := os.MkdirTemp("", "lockledger-example")
	defer os.RemoveAll(root)
	ctx := context.Background()

	// Writes are signed with the user's key from the trust store
	// (trust.Dir(): ~/.config/lockledger), as the command line's are;
	// this example keeps a store of its own.
	trustDir, _ := os.MkdirTemp("", "lockledger-example-trust")
	defer os.RemoveAll(trustDir)
	ts, err := trust.Open(trustDir, root)
	if err != nil {
		log.Fatal(err)
	}
	l, err := ledger.Open(ctx, root, ledger.WithTrustStore(ts))
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	s, err := lease.Acquire(ctx, l, ledger.AcquireRequest{Lock: "nightly-etl", Identity: ledger.Identity{Actor: "etl-service"}, TTL: 30 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("holding", s.Lock(), "with fencing token", s.FencingToken())

	// A second caller is refused while the lease is held.
	_, err = lease.Acquire(ctx, l, ledger.AcquireRequest{Lock: "nightly-etl", Identity: ledger.Identity{Actor: "other"}})
	var held *ledger.HeldError
	if errors.As(err, &held) {
		fmt.Println("blocked by", held.Holder.Actor)
	}

	select {
	case <-s.Lost():
		log.Fatal("lock lost: stop working", s.Err())
	default: // do the work, checking Lost between steps
	}
	if err := s.Release(ctx, lease.Result{Result: "success"}); err != nil {
		log.Fatal(err)
	}
	<-s.Done()
	fmt.Println("released")
	// Output:
	// holding nightly-etl with fencing token 1
	// blocked by etl-service
	// released
}
