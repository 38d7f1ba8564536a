package e2e

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/clitest"
)

// A question asked on the terminal ([y/N]: trust forget, steal --active,
// release --force) ends on TERM or INT at once, with 128+N and nothing
// done, and an answer typed is read as before: the read of the terminal, restarted after the signal handler,
// waited on for the user's answer (trust forget for ever; steal and
// release until their answer's 30 s ran out).
func TestAQuestionOnTheTerminalEndsOnASignal(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "deploy", "--holder", "none").Stdout)
	before := clitest.EventCount(t, root)
	for _, c := range []struct {
		name string
		sig  syscall.Signal
		args []string
	}{
		{"trust forget", syscall.SIGTERM, []string{"trust", "forget"}},
		{"steal --active", syscall.SIGINT, []string{"steal", "deploy", "--active", "--reason", "test"}},
		{"release --force", syscall.SIGTERM, []string{"release", "deploy", "--force", "--request-id", rid, "--reason", "test"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := onTerminal(t, root, `"$0" "$@"; echo "after-$?"`, c.args...)
			s.await("[y/N]")
			var asking int
			for _, p := range inSession(s.pid) {
				if strings.Contains(p.cmdline, c.args[0]) && !strings.HasPrefix(p.cmdline, "sh ") {
					asking = p.pid
				}
			}
			if asking == 0 {
				t.Fatalf("no process of %s in the session: %v", c.name, inSession(s.pid))
			}
			asked := time.Now()
			if err := syscall.Kill(asking, c.sig); err != nil {
				t.Fatal(err)
			}
			s.await("after-" + strconv.Itoa(128+int(c.sig)))
			if waited := time.Since(asked); waited > 10*time.Second {
				t.Fatalf("%s ended %v after %v, want at once", c.name, waited.Round(time.Millisecond), c.sig)
			}
			s.exit()
		})
	}
	// An answer typed is still read: no is no.
	s := onTerminal(t, root, `"$0" "$@"; echo "after-$?"`, "steal", "deploy", "--active", "--reason", "test")
	s.await("[y/N]")
	s.typed("n")
	s.await("not confirmed")
	s.await("after-1")
	s.exit()
	if n := clitest.EventCount(t, root); n != before {
		t.Fatalf("questions ended by a signal recorded %d events", n-before)
	}
	if out := clitest.Must(t, 0, root, "trust", "show").Stdout; !strings.Contains(out, "pin") {
		t.Fatalf("trust forget ended by a signal forgot the pin:\n%s", out)
	}
}
