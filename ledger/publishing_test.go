package ledger

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/testlog"
	"github.com/lockledger/lockledger/internal/testwitness"
	"github.com/lockledger/lockledger/witness"
	"github.com/lockledger/lockledger/witness/tlogwitness"
)

// awaitPublished waits until the publishing worker has published every
// checkpoint handed to it.
func awaitPublished(t *testing.T, l *Ledger) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		l.publishing.mu.Lock()
		idle := !l.publishing.running
		l.publishing.mu.Unlock()
		if idle {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the publishing worker is still under way after a minute")
		}
	}
}

// A witness that never answers holds up no write: the acquisition and
// the heartbeats that each sign a checkpoint return while the witness
// still holds the cosign request unanswered (its timeout here is an
// hour), and Close waits for the publishing worker, which says what it
// could not get once the witness is gone.
func TestAWitnessThatNeverAnswersHoldsUpNoWrite(t *testing.T) {
	t.Parallel()
	s, _ := testKey(t)
	sw := testwitness.StartSilent(t)
	v, err := tlogwitness.NewVerifier("example.com/w+38611d82+BDcHPXdKthmD1qNhHTIaGeZ33leZYsx6m03uJSIoaOSx")
	if err != nil {
		t.Fatal(err)
	}
	w, err := tlogwitness.New(sw.URL, v, tlogwitness.WithTimeout(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var logged testlog.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	e := open(t, WithSigner(s), WithWitnesses(witness.New(nil, 0, log, w)), WithCheckpointPolicy(1, time.Hour), WithLogger(log))
	ctx := context.Background()
	wrote := make(chan error, 1)
	go func() {
		a, err := e.l.TryAcquire(ctx, req("deploy", "r1", 100))
		for i := 0; err == nil && i < 3; i++ {
			_, err = e.l.Renew(ctx, RenewRequest{Lock: "deploy", Identity: a.Identity(), FencingToken: a.FencingToken})
		}
		wrote <- err
	}()
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("an acquisition and three heartbeats did not return in a minute: they wait for a witness that never answers")
	}
	for deadline := time.Now().Add(time.Minute); sw.Accepted() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no cosign request reached the witness")
		}
	}
	if n := count(t, e.l); n != 4 {
		t.Fatalf("%d events, want the acquisition and three heartbeats", n)
	}
	sw.Stop()
	if err := e.l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := logged.String(); !strings.Contains(got, "did not cosign the checkpoint") || !strings.Contains(got, "size=4") {
		t.Fatalf("Close returned before the worker said the witness did not cosign the last checkpoint (size 4):\n%s", got)
	}
}
