package fence_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/fence"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
)

// rejections reads every fence_rejected event of the ledger.
func rejections(t *testing.T, l *ledger.Ledger) []*replay.Event {
	t.Helper()
	var out []*replay.Event
	err := replay.Scan(context.Background(), pgtest.Open(t, l.Source()), replay.Filter{Types: []events.Type{events.FenceRejected}}, func(ev *replay.Event) error {
		ev.Body = append([]byte(nil), ev.Body...)
		out = append(out, ev)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func verifyClean(t *testing.T, l *ledger.Ledger) {
	t.Helper()
	rep, err := l.Verify(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.ProblemCount != 0 {
		t.Fatalf("verify: %d problems: %+v", rep.ProblemCount, rep.Problems)
	}
}

// The case fencing exists for: a holder's lock is taken over (it paused
// past its TTL, say) and the new holder writes; the old holder then
// writes with its token, which the fence refuses, and the refusal is in
// the ledger as fence_rejected naming the lock, both tokens, the file and
// the old holder's request.
func TestStaleWriteAfterATakeOverIsRefusedAndRecorded(t *testing.T) {
	ctx := context.Background()
	l, err := ledger.Open(ctx, t.TempDir(), ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	old, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "deploy", Identity: ledger.Identity{RequestID: "req_old"}})
	if err != nil {
		t.Fatal(err)
	}
	taker, err := l.Steal(ctx, ledger.StealRequest{AcquireRequest: ledger.AcquireRequest{Lock: "deploy",
		Identity: ledger.Identity{RequestID: "req_new"}}, Active: true, Note: "the old holder stopped answering"})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "release.txt")
	if err := fence.WriteFile(ctx, path, taker.FencingToken, strings.NewReader("new")); err != nil {
		t.Fatal(err)
	}
	werr := fence.WriteFile(ctx, path, old.FencingToken, strings.NewReader("old"))
	if !errors.Is(werr, fence.ErrStale) {
		t.Fatalf("the old holder's write: %v, want refused", werr)
	}
	if err := fence.Record(ctx, l, "deploy", ledger.Identity{RequestID: "req_old"}, werr); err != nil {
		t.Fatal(err)
	}
	// An error that is no refusal records nothing.
	if err := fence.Record(ctx, l, "deploy", ledger.Identity{}, errors.New("disk full")); err != nil {
		t.Fatal(err)
	}
	got := rejections(t, l)
	if len(got) != 1 {
		t.Fatalf("%d fence_rejected events, want 1", len(got))
	}
	ev := got[0]
	if ev.LockName != "deploy" || ev.RequestID != "req_old" || ev.StaleToken != old.FencingToken ||
		ev.CurrentToken != taker.FencingToken || ev.Resource != path || ev.Fence != events.FenceFileWrite || ev.HostID == "" || ev.PID == 0 ||
		ev.FencingToken != 0 {
		t.Fatalf("fence_rejected: %s", ev.Body)
	}
	verifyClean(t, l)
	// It changed no state: the new holder still holds the lock.
	st, err := l.Status(ctx, "deploy")
	if err != nil {
		t.Fatal(err)
	}
	if st.Holder == nil || st.Holder.RequestID != "req_new" {
		t.Fatalf("after the rejection the lock is %+v, want req_new's", st)
	}
}

// A refusal the ledger cannot take as given is bad input, named, and
// nothing is written.
func TestRecordFenceRejectedRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	l, err := ledger.Open(ctx, t.TempDir(), ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, c := range []struct {
		lock string
		p    events.FenceRejectedPayload
	}{
		{"Deploy", events.FenceRejectedPayload{Fence: events.FenceCheck, Resource: "r", StaleToken: 1, CurrentToken: 2}},
		{"deploy", events.FenceRejectedPayload{Fence: "delete", Resource: "r", StaleToken: 1, CurrentToken: 2}},
		{"deploy", events.FenceRejectedPayload{Fence: events.FenceCheck, Resource: "", StaleToken: 1, CurrentToken: 2}},
		{"deploy", events.FenceRejectedPayload{Fence: events.FenceCheck, Resource: "r", StaleToken: 0, CurrentToken: 2}},
		{"deploy", events.FenceRejectedPayload{Fence: events.FenceCheck, Resource: "r", StaleToken: 3, CurrentToken: 3}},
	} {
		if err := l.RecordFenceRejected(ctx, c.lock, ledger.Identity{}, c.p); !errors.Is(err, events.ErrInvalid) {
			t.Errorf("%s %+v: %v, want invalid input", c.lock, c.p, err)
		}
	}
	if got := rejections(t, l); len(got) != 0 {
		t.Fatalf("%d events written", len(got))
	}
	// A resource of any bytes is recorded, escaped.
	if err := l.RecordFenceRejected(ctx, "deploy", ledger.Identity{}, events.FenceRejectedPayload{Fence: events.FenceFileWrite,
		Resource: "/tmp/a\nb\xff", StaleToken: 1, CurrentToken: 2}); err != nil {
		t.Fatal(err)
	}
	if got := rejections(t, l); len(got) != 1 || got[0].Resource != `/tmp/a\nb\xff` {
		t.Fatalf("escaped resource: %+v", got)
	}
	verifyClean(t, l)
}
