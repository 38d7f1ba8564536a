package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/internal/testlog"
)

// TestPostgresWaiterSaysWhetherItWasWokenOrPolls: a --wait waiter on
// PostgreSQL listens for the lock's release on a connection of its own.
// Where the server ends idle sessions (idle_session_timeout, as a fleet's
// database or pooler may), that connection is closed while it only
// listens: the waiter says so and that it polls from then on (before, it
// went on polling without a word, and saw the release up to a second
// later), and still gets the lock. Where it is not, the waiter is woken by
// the notification and says so at debug level; a release made while the
// waiter was between two sleeps is seen by its next look instead, which a
// busy machine makes likelier, so that case has three tries to be woken.
func TestPostgresWaiterSaysWhetherItWasWokenOrPolls(t *testing.T) {
	t.Parallel()
	c := pgtest.Get(t)
	const polls, woken = "the connection that listened for the lock's release was closed: waiting by polling from now on", "woken by the database's notification"
	// handoff releases the lock a holder has to a --wait waiter, and
	// returns the waiter's log.
	handoff := func(idle bool) string {
		name := pgtest.CreateDatabase(t)
		if idle {
			if err := c.Exec("ALTER DATABASE " + pgx.Identifier{name}.Sanitize() + " SET idle_session_timeout = '1s'"); err != nil {
				t.Fatal(err)
			}
		}
		url := c.SocketURL(name)
		h := newPGHost(t, "holder", url)
		rid := strings.TrimSpace(h.must(t, 0, "acquire", "deploy", "--pid", "1").Stdout)
		w := newPGHost(t, "waiter", url)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := w.command(ctx, "acquire", "deploy", "--wait", "90s", "--pid", "1")
		cmd.Env = append(cmd.Env, "LOCKLEDGER_LOG_LEVEL=debug")
		var stderr testlog.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if idle {
			awaitCondition(t, "the waiter saying that its listening connection was closed", func() bool { return strings.Contains(stderr.String(), polls) })
		} else {
			awaitCondition(t, "the waiter waiting", func() bool { return strings.Contains(stderr.String(), "waiting for lock") })
		}
		h.must(t, 0, "release", "deploy", "--request-id", rid)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("idle timeout %v: the waiter: %v\n%s", idle, err, stderr.String())
		}
		return stderr.String()
	}
	if got := handoff(true); strings.Contains(got, woken) {
		t.Errorf("idle timeout: the waiter's log says it was woken:\n%s", got)
	}
	for try := 1; ; try++ {
		got := handoff(false)
		if strings.Contains(got, polls) {
			t.Fatalf("no idle timeout: the waiter's log says it polls:\n%s", got)
		}
		if strings.Contains(got, woken) {
			break
		}
		if try == 3 {
			t.Fatalf("no idle timeout: in 3 tries the waiter's log never said it was woken; the last:\n%s", got)
		}
	}
}
