package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/pgtest"
)

// jobEvent appends one event that changes no file, as a grouped decision.
func jobEvent(w *writeTx, req string) error {
	p := events.JobProcessesPayload{JobRequestID: "req_gc_job", PIDs: []int{1}, Action: "left_running", Note: "review"}
	_, err := w.append(events.JobProcesses, Identity{RequestID: req, Actor: "gc-review"}, &p)
	return err
}

// A group whose every caller is gone stops: a caller cancelled while its
// group's connection hangs (a network partition: no bytes, no reset)
// answers, although the server's busy timeout never acts.
func TestReviewPostgresHangCallerCancel(t *testing.T) {
	name := pgtest.CreateDatabase(t)
	proxy := pgtest.NewProxy(t, pgtest.TCPAddr(t))
	defer proxy.Restore()
	l, err := Open(context.Background(), t.TempDir(), WithDatabase(proxy.URL(name)), Unsigned(), WithBusyTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	hung := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- l.write(ctx, "hang", func(w *writeTx) (error, error) {
			if err := jobEvent(w, "req_gc_hang"); err != nil {
				return nil, err
			}
			proxy.Hang() // partition before the commit
			close(hung)
			return nil, nil
		})
	}()
	select {
	case <-hung:
	case err := <-done:
		t.Fatalf("the write ended before the partition: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a write whose commit never reached the server succeeded")
		}
	case <-time.After(30 * time.Second):
		t.Errorf("the caller cancelled 30s ago (busy timeout 2s) still waits on a hung connection")
		proxy.Restore()
		t.Logf("after Restore: %v", <-done)
	}
}

// A decision refused in a group and made again alone holds no other
// member of the group: the others are answered before it is remade, and
// its remake holds up no leader.
func TestReviewRemadeAloneHoldsNoOne(t *testing.T) {
	for _, slowLeads := range []bool{true, false} {
		t.Run(map[bool]string{true: "slow-leads", false: "fast-leads"}[slowLeads], func(t *testing.T) {
			l := openSQLite(t)
			remaking, release := make(chan struct{}), make(chan struct{})
			slowDone, fastDone := make(chan error, 1), make(chan error, 1)
			defer func() {
				close(release)
				if err := <-slowDone; err != nil {
					t.Errorf("the decision made alone: %v", err)
				}
			}()
			slow := func() {
				slowDone <- l.write(context.Background(), "slow", func(w *writeTx) (error, error) {
					if err := w.onlyOwnFiles(true); err != nil {
						return nil, err
					}
					close(remaking)
					<-release
					return nil, jobEvent(w, "req_gc_slow")
				})
			}
			fctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			fast := func() {
				_, err := l.TryAcquire(fctx, AcquireRequest{Lock: "fast", Identity: Identity{Actor: "gc-review"}})
				fastDone <- err
			}
			let := holdWriter(t, l)
			first, second := fast, slow
			if slowLeads {
				first, second = slow, fast
			}
			go first()
			awaitQueued(t, l, 1)
			go second()
			awaitQueued(t, l, 2)
			let()
			select {
			case <-remaking:
			case <-time.After(30 * time.Second):
				t.Fatal("the refused decision was never made again alone")
			}
			if evs := lockEvents(t, l, "fast"); len(evs) != 1 {
				t.Fatalf("%d events of the fast decision, want 1", len(evs))
			}
			cancel()
			select {
			case err := <-fastDone:
				if err != nil {
					t.Errorf("the committed fast decision: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Error("the fast decision, committed and cancelled, is held by another's remake")
			}
		})
	}
}

// A panic in the group's work outside the decisions' fn (here a removal
// after the commit) answers every member, is raised on the caller of the
// decision that panicked (the leader's or another's), and leaves the queue
// free.
func TestReviewPanicAfterCommitAnswersEveryone(t *testing.T) {
	for _, at := range []int{0, 1} {
		t.Run(fmt.Sprint("panics-at-", at), func(t *testing.T) { panicAfterCommit(t, at) })
	}
}

func panicAfterCommit(t *testing.T, at int) {
	l := openSQLite(t)
	ctx := context.Background()
	acquire := func(lock string) func() error {
		return func() error {
			_, err := l.TryAcquire(ctx, AcquireRequest{Lock: lock, Identity: Identity{Actor: "gc-review"}})
			return err
		}
	}
	boom := func() error {
		return l.write(ctx, "r-boom", func(w *writeTx) (error, error) {
			w.removeAfterCommit(func() error { panic("removal") })
			return nil, jobEvent(w, "req_gc_boom")
		})
	}
	all := []func() error{acquire("r-first"), acquire("r-after")}
	all = slices.Insert(all, at, boom)
	errs, panics := inGroup(t, l, nil, all...)
	if panics[at] != "removal" {
		t.Errorf("the member whose removal panicked got %v, want the panic", panics[at])
	}
	for i := range all {
		if i == at {
			continue
		}
		if panics[i] != nil {
			t.Errorf("member %d panicked: %v", i, panics[i])
		}
		if errs[i] != nil && !errors.Is(errs[i], errGroupPanicked) {
			t.Errorf("member %d: %v", i, errs[i])
		}
	}
	done := make(chan error, 1)
	go func() { done <- acquire("r-next")() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the next decision: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the next decision never answered")
	}
}
