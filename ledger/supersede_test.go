package ledger

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/pgtest"
)

// TestSupersedingAJobOnAnotherHostSaysItCannotBeAwaited: nothing on this
// host can see the processes of a holder on another one, so the supersede
// says so, in the steal's note and to the caller (a.NotAwaited, which the
// lease's wait reports instead of waiting: see lease's test of the same name).
func TestSupersedingAJobOnAnotherHostSaysItCannotBeAwaited(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	far, err := Open(ctx, root, WithHost(Host{ID: "far-away", BootID: "other-boot"}), Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer far.Close()
	if _, err := far.TryAcquire(ctx, AcquireRequest{Lock: "issue-9", Identity: Identity{RequestID: "old-run", PID: os.Getpid()}}); err != nil {
		t.Fatal(err)
	}
	here, err := Open(ctx, root, Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer here.Close()
	a, err := here.Supersede(ctx, AcquireRequest{Lock: "issue-9", Identity: Identity{RequestID: "new-run"}})
	if err != nil {
		t.Fatal(err)
	}
	if !a.Stolen || a.Previous == nil || a.Previous.RequestID != "old-run" || !strings.Contains(a.NotAwaited, "host far-away") {
		t.Fatalf("Supersede: stolen %v from %+v, not awaited %q; want old-run taken over, not awaited because it is on host far-away",
			a.Stolen, a.Previous, a.NotAwaited)
	}
	var body []byte
	if err := pgtest.Open(t, here.Source()).QueryRow(`SELECT body FROM events WHERE type = 'lock_stolen'`).Scan(&body); err != nil {
		t.Fatal(err)
	}
	_, p, err := events.Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	st := p.(*events.Stolen)
	if st.Reason != events.ReasonSuperseded || !strings.Contains(st.Note, "superseded by a newer run") ||
		!strings.Contains(st.Note, "host far-away") || !strings.Contains(st.Note, "cannot be awaited") {
		t.Fatalf("lock_stolen %s / %q: want superseded, with a note that the job on far-away cannot be awaited", st.Reason, st.Note)
	}
}
