package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/clitest"
)

// pruneKeyLedger writes a signed ledger whose first events a prune may
// archive, one of them a steal, and writes that archive; it returns the
// root, the archive and the run of the ledger's owner.
func pruneKeyLedger(t *testing.T) (root, arch string, owner func(want int, env []string, args ...string) clitest.Result) {
	t.Helper()
	root = filepath.Join(t.TempDir(), "root")
	owner = func(want int, env []string, args ...string) clitest.Result {
		t.Helper()
		return clitest.MustWith(t, want, root, append([]string{"LOCKLEDGER_CHECKPOINT_EVERY=4"}, env...), args...)
	}
	owner(0, nil, "acquire", "app", "--actor", "victim", "--pid", "0", "--ttl", "1h")
	owner(0, nil, "steal", "app", "--active", "--actor", "thief", "--pid", "0", "--ttl", "1h", "--yes", "--reason", "covered by the head")
	for i := range 4 {
		req := "r" + strconv.Itoa(i)
		owner(0, nil, "acquire", "other", "--actor", "tester", "--request-id", req, "--pid", "0", "--ttl", "1h")
		owner(0, nil, "release", "other", "--request-id", req)
	}
	arch = filepath.Join(t.TempDir(), "old.jsonl")
	r := owner(0, nil, "archive", "--before", time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "-o", arch)
	if !regexp.MustCompile(`archived seq 1-\d+ `).MatchString(r.Stdout) {
		t.Fatalf("archive said: %s", r.Stdout)
	}
	return root, arch, owner
}

// eventCount is how many events the live store of root holds.
func eventCount(t *testing.T, root string) int {
	t.Helper()
	db := clitest.DB(t, root)
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM events`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPruneNeedsTheLedgersKey: a prune or unprune by a writer with no key
// (--unsigned) or with a key the trust store did not pin for the ledger
// before (another trust store: someone who can write the root but holds
// none of its keys) is refused, exit 2, naming the rule, and the live
// store keeps every event.
func TestPruneNeedsTheLedgersKey(t *testing.T) {
	t.Parallel()
	root, arch, owner := pruneKeyLedger(t)
	before := eventCount(t, root)
	stranger := "LOCKLEDGER_TRUST_DIR=" + filepath.Join(t.TempDir(), "stranger-trust")
	for _, c := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"--unsigned", "prune", "--archive", arch}, "--unsigned"},
		{[]string{stranger}, []string{"prune", "--archive", arch}, "is not pinned for ledger"},
		{nil, []string{"--unsigned", "unprune", "--archive", arch}, "--unsigned"},
	} {
		r := owner(2, c.env, c.args...)
		if !strings.Contains(r.Stderr, c.want) || !strings.Contains(r.Stderr, "needs the ledger's signing key") {
			t.Errorf("lockledger %s: the refusal does not name the rule: %s", strings.Join(c.args, " "), r.Stderr)
		}
		if n := eventCount(t, root); n != before {
			t.Fatalf("lockledger %s: the live store holds %d events, %d before", strings.Join(c.args, " "), n, before)
		}
	}
	// The owner, with the ledger's key, prunes; verify checks the
	// marker's signature and says OK.
	owner(0, nil, "prune", "--archive", arch)
	if r := owner(0, nil, "verify"); !strings.Contains(r.Stdout, "verify: OK") {
		t.Errorf("verify after the owner's prune: %s", r.Stdout)
	}
}

// TestPruneByAStrangersKeyFailsTheOwnersVerify: someone who can write the
// root signs a prune with a key of their own (an explicit --signing-key
// with --unsigned, which pins nothing), then deletes the archive: the
// steal the owner's kept head covered is gone. The owner's next write
// signs the log with the marker in it, and the owner's verify still fails,
// naming the marker: no key the owner pins signed it.
func TestPruneByAStrangersKeyFailsTheOwnersVerify(t *testing.T) {
	t.Parallel()
	root, arch, owner := pruneKeyLedger(t)
	key := filepath.Join(t.TempDir(), "mallory.key")
	clitest.Must(t, 0, root, "keygen", "--name", "mallory", "-o", key)
	r := owner(0, nil, "--unsigned", "--signing-key", key, "prune", "--archive", arch)
	m := regexp.MustCompile(`recorded: ledger_pruned, seq (\d+)`).FindStringSubmatch(r.Stdout)
	if m == nil {
		t.Fatalf("prune said: %s", r.Stdout)
	}
	if err := os.Remove(arch); err != nil {
		t.Fatal(err)
	}
	owner(0, nil, "acquire", "later", "--pid", "0", "--ttl", "1m")
	r = owner(1, nil, "verify")
	if !strings.Contains(r.Stdout, "ledger_pruned event at seq "+m[1]+" is signed by no key verify trusts") {
		t.Errorf("the owner's verify does not name the stranger's prune:\n%s", r.Stdout)
	}
}
