package ledger

import (
	"context"
	"errors"
	"testing"
)

// A steal that commits, and removes its journal, between CheckHolding's
// two reads must not read as the robbed holder still holding: the watch
// of a run would not look again until the lock changed once more, and
// the robbed job would run on until its next heartbeat.
func TestCheckHoldingSeesAStealThatCommitsBetweenItsReads(t *testing.T) {
	ctx := context.Background()
	e := open(t)
	got, err := e.l.TryAcquire(ctx, req("deploy", "holder", 100))
	if err != nil {
		t.Fatal(err)
	}
	stolen := false
	testHookHoldingJournalRead = func() {
		if stolen {
			return
		}
		stolen = true
		if _, err := e.l.Steal(ctx, StealRequest{AcquireRequest: req("deploy", "robber", 200), Active: true, Note: "robbed"}); err != nil {
			t.Errorf("steal: %v", err)
		}
	}
	t.Cleanup(func() { testHookHoldingJournalRead = nil })
	err = e.l.CheckHolding(ctx, "deploy", "holder", got.FencingToken)
	var nh *NotHolderError
	if !stolen || !errors.As(err, &nh) || nh.EndedBy == nil || nh.EndedBy.RequestID != "robber" {
		t.Fatalf("CheckHolding with a steal committed between its reads: %v (ended by %+v), want the robber's steal", err, nh)
	}
}
