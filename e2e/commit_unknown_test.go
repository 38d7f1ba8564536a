package e2e

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/pgtest"
)

// An acquire whose COMMIT reached the database but whose answer was lost,
// with the database out of reach from then on so that the log cannot be
// read back, exits 1 with --json's error kind of its own, commit_unknown:
// not "failure", since the lock may well be recorded, and a script must
// look before it tries again. The read-back gives up after twice the busy
// timeout, here 2 s rather than the default 10 s.
func TestPostgresCommitUnknownHasItsJSONKind(t *testing.T) {
	t.Parallel()
	name := pgtest.CreateDatabase(t)
	proxy := pgtest.NewProxy(t, pgtest.TCPAddr(t))
	a := newPGHost(t, "lost-reply", proxy.URL(name))
	pid := strconv.Itoa(os.Getpid())
	a.must(t, 0, "acquire", "warm", "--json", "--pid", pid)
	// The COMMIT as pgx sends it: a simple query message.
	proxy.LoseReplyTo([]byte("Q\x00\x00\x00\x0bcommit\x00"), true)
	r := clitest.RunWith(t, a.root, append(a.env(), invocation.EnvBusyTimeout+"=2s"), "", "acquire", "deploy", "--json", "--pid", pid)
	if n := proxy.RepliesLost(); n != 1 {
		t.Fatalf("the proxy lost %d replies to COMMIT, want 1\nstdout: %s\nstderr: %s", n, r.Stdout, r.Stderr)
	}
	var o struct {
		Error, Message, Suggestion string
	}
	if err := json.Unmarshal([]byte(r.Stdout), &o); err != nil {
		t.Fatalf("stdout %q: %v", r.Stdout, err)
	}
	if r.Code != 1 || o.Error != "commit_unknown" || !strings.Contains(o.Message, "the commit's outcome is unknown") ||
		!strings.Contains(o.Suggestion, "lockledger status") {
		t.Fatalf("an acquire whose commit's outcome could not be read back: exit %d, %s, want exit 1 and error commit_unknown with a suggestion",
			r.Code, r.Stdout)
	}
}
