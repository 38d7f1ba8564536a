package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/internal/clitest"
)

// openPTY opens a pseudo-terminal: its controlling side and the terminal a
// command reads from.
func openPTY(t *testing.T) (control, term *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// releaseOnTerminal runs release ARGS... with a terminal as its standard
// input, answer typed on it.
func releaseOnTerminal(t *testing.T, root, answer string, args ...string) clitest.Result {
	t.Helper()
	control, term := openPTY(t)
	if _, err := control.WriteString(answer + "\n"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := clitest.Command(ctx, root, append([]string{"release"}, args...)...)
	c.Stdin = term
	return clitest.Exec(t, c)
}

// A forced release says what it is: it needs a reason, asks on a terminal
// (--yes elsewhere), and records forced, who forced it, why, and result
// forced rather than success.
func TestForcedReleaseAsksAndIsRecordedAsForced(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "deploy", "--actor", "alice").Stdout)
	before := clitest.EventCount(t, root)

	r := clitest.Must(t, 2, root, "release", "deploy", "--force", "--yes", "--actor", "oncall")
	if !strings.Contains(r.Stderr, "--reason") {
		t.Fatalf("release --force without --reason: the message does not name --reason:\n%s", r.Stderr)
	}
	r = clitest.Must(t, 2, root, "release", "deploy", "--force", "--reason", "runner gone", "--actor", "oncall")
	if !strings.Contains(r.Stderr, "--yes") {
		t.Fatalf("release --force off a terminal without --yes: the message does not name --yes:\n%s", r.Stderr)
	}
	if n := clitest.EventCount(t, root); n != before {
		t.Fatalf("refused forced releases wrote %d events", n-before)
	}

	r = releaseOnTerminal(t, root, "n", "deploy", "--force", "--reason", "runner gone", "--actor", "oncall")
	if r.Code == 0 || !strings.Contains(r.Stderr, "Release it anyway") || !strings.Contains(r.Stderr, "alice") {
		t.Fatalf("release --force answered no on a terminal: exit %d\n%s", r.Code, r.Stderr)
	}
	if st := statusJSON(t, root, "deploy")["state"]; st != "held" {
		t.Fatalf("after a forced release answered no, the lock is %v, want held", st)
	}

	r = releaseOnTerminal(t, root, "y", "deploy", "--force", "--reason", "INC-9: runner gone", "--actor", "oncall")
	if r.Code != 0 {
		t.Fatalf("release --force answered yes on a terminal: exit %d\n%s", r.Code, r.Stderr)
	}
	b := lastBody(t, root, "lock_released")
	if b["forced"] != true || b["result"] != "forced" || b["actor"] != "oncall" || b["note"] != "INC-9: runner gone" ||
		b["released_request_id"] != rid {
		t.Fatalf("the forced release's lock_released: %v", b)
	}
	tl := clitest.Must(t, 0, root, "timeline", "--lock", "deploy", "--wide").Stdout
	if !strings.Contains(tl, "FORCED, released "+rid) || !strings.Contains(tl, `note "INC-9: runner gone"`) ||
		strings.Contains(tl, "result success") {
		t.Fatalf("the timeline does not show the forced release as forced:\n%s", tl)
	}

	// A forced release that says how the holder's work ended keeps that result.
	clitest.Must(t, 0, root, "acquire", "deploy", "--actor", "alice")
	clitest.Must(t, 0, root, "release", "deploy", "--force", "--yes", "--reason", "job failed", "--result", "failure")
	if b := lastBody(t, root, "lock_released"); b["forced"] != true || b["result"] != "failure" {
		t.Fatalf("a forced release with --result failure: %v", b)
	}
	clitest.Verify(t, 0, root)
}
