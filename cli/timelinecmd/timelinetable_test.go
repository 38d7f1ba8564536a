package timelinecmd_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/ledger"
)

// wideLedger has what makes a timeline wide: a long host id, generated
// request ids, a long lock name and actor, a blocked attempt whose details
// name the holder, and an actor recorded with control characters (written
// as an older or hostile writer could).
func wideLedger(t *testing.T) (root, aliceID string) {
	t.Helper()
	ctx := context.Background()
	root = t.TempDir()
	const host = "build-host-17.ci.eu-west-1.example.internal"
	l, err := ledger.Open(ctx, root, ledger.WithHost(ledger.Host{ID: host, BootID: ledger.ThisHost().BootID}), ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	aliceID, bobID := events.NewRequestID(now), events.NewRequestID(now.Add(time.Millisecond))
	lock := "frontend-deploy-pipeline-for-the-eu-west-1-region-and-its-canaries"
	id := func(rid, actor string) ledger.Identity {
		return ledger.Identity{RequestID: rid, Actor: actor, PID: os.Getpid()}
	}
	if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: lock, Identity: id(aliceID, "release-bot-for-the-frontend-deploy-pipeline"),
		TTL: time.Hour, Intent: "deploy", IntentVersion: "v42", Metadata: map[string]string{"ticket": "INC-7", "change": "CHG-2026-0314-frontend"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: lock, Identity: id(bobID, "bob"), RecordBlocked: true, Waited: 5 * time.Second}); err == nil {
		t.Fatal("bob acquired a held lock")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(root, ledger.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	at := time.Now().UTC()
	fixture.Append(t, db, &events.Event{
		Envelope: events.Envelope{Type: events.LockAcquired, At: events.FormatTime(at), LockName: "other",
			RequestID: "req_far", Actor: "bot\x1b]0;pwned\x07\rFORGED\u009b31m", HostID: host, PID: 4242},
		Payload: &events.Acquired{TTLSeconds: 3600, Intent: "deploy", FencingToken: 3, Metadata: map[string]string{}, PIDStart: "1",
			BootID: ledger.ThisHost().BootID},
	})
	return root, aliceID
}

func rawControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r != '\n' && (r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f) })
}

// The timeline's table fits 120 columns: ids shortened (the same way in
// DETAILS), the rest cut or wrapped, control characters still escaped;
// --wide prints every field whole.
func TestTimelineTableFits120Columns(t *testing.T) {
	root, aliceID := wideLedger(t)
	short := "req_…" + aliceID[len(aliceID)-6:]

	out := clitest.Must(t, 0, root, "timeline").Stdout
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	rows := 0
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > 120 {
			t.Errorf("a line of %d columns: %q", n, l)
		}
		if !strings.HasPrefix(l, " ") {
			rows++
		}
	}
	if rows != 4 {
		t.Errorf("%d lines begin a row, want the header and 3 events:\n%s", rows, out)
	}
	if rawControl(out) {
		t.Errorf("the table prints a raw control character:\n%q", out)
	}
	for _, want := range []string{short, "held by " + short, `bot\x1b`, "@build-ho", "frontend-de", "metadata change=CHG-2026-0314-frontend"} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, aliceID) {
		t.Errorf("the table prints the whole request id %s:\n%s", aliceID, out)
	}

	wide := clitest.Must(t, 0, root, "timeline", "--wide").Stdout
	for _, want := range []string{aliceID, "held by " + aliceID, "build-host-17.ci.eu-west-1.example.internal",
		"release-bot-for-the-frontend-deploy-pipeline", `bot\x1b]0;pwned\x07\rFORGED\u009b31m`} {
		if !strings.Contains(wide, want) {
			t.Errorf("--wide lacks %q:\n%s", want, wide)
		}
	}
	if rawControl(wide) || strings.Count(wide, "\n") != 4 {
		t.Errorf("--wide: want 4 lines and no raw control character:\n%q", wide)
	}
	// history keeps its one line per event.
	if h := clitest.Must(t, 0, root, "history", "other").Stdout; !strings.Contains(h, `bot\x1b]0;pwned`) || strings.Count(h, "\n") != 2 {
		t.Errorf("history:\n%s", h)
	}
}
