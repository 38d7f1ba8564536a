package e2e

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/pgtest"
)

// TestAHostWhosePinWasPrunedStillWrites: on a PostgreSQL ledger of two
// hosts, one host's pin names a seq that another host's recorded prune
// (of a verified archive) has since taken out of the live log. The event
// is gone by the ledger's own rule, not by a restore: the host's next
// write goes on, and its readers raise no alarm of a ledger behind.
func TestAHostWhosePinWasPrunedStillWrites(t *testing.T) {
	t.Parallel()
	c := pgtest.Get(t)
	name := pgtest.CreateDatabase(t)
	web := newPGHost(t, "web", c.SocketURL(name))
	ops := newPGHost(t, "ops", c.SocketURL(name))
	rid := strings.TrimSpace(web.must(t, 0, "acquire", "a", "--pid", "1").Stdout)
	web.must(t, 0, "release", "a", "--request-id", rid)
	for range 3 {
		rid := strings.TrimSpace(ops.must(t, 0, "acquire", "b", "--pid", "1").Stdout)
		ops.must(t, 0, "release", "b", "--request-id", rid)
	}
	ops.must(t, 0, "checkpoint")
	rid = strings.TrimSpace(ops.must(t, 0, "acquire", "b", "--pid", "1").Stdout) // a boundary below the head
	ops.must(t, 0, "release", "b", "--request-id", rid)
	arch := t.TempDir() + "/old.jsonl"
	r := ops.must(t, 0, "archive", "--before", time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "-o", arch)
	// web's pin names seq 2, its release.
	last := 0
	if m := regexp.MustCompile(`archived seq 1-(\d+) `).FindStringSubmatch(r.Stdout); m != nil {
		last, _ = strconv.Atoi(m[1])
	}
	if last < 2 {
		t.Fatalf("the archive does not take seq 2: %s", r.Stdout)
	}
	ops.must(t, 0, "prune", "--archive", arch)
	if r := web.run(t, "status", "a"); r.Code != 0 || strings.Contains(r.Stderr, "this host has written to") {
		t.Errorf("status on the host whose pin was pruned: exit %d\n%s", r.Code, r.Stderr)
	}
	if r := web.run(t, "verify"); r.Code != 0 || strings.Contains(r.Stderr, "this host has written to") {
		t.Errorf("verify on the host whose pin was pruned: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if r := web.run(t, "acquire", "c", "--pid", "1"); r.Code != 0 {
		t.Errorf("the next write of the host whose pin was pruned: exit %d\n%s", r.Code, r.Stderr)
	}
}
