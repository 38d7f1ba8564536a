package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
)

// TestBadAcquireRequestCreatesNothing: a request the one validation of an
// acquisition refuses exits 2 naming the field and the rule before any
// ledger is opened: no root, no ledger, no signing key, no pin.
func TestBadAcquireRequestCreatesNothing(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	for i, c := range []struct {
		args []string
		says string
	}{
		{[]string{"acquire", "deploy", "--intent", "a\tb"}, `intent "a\tb": must not contain control characters`},
		{[]string{"acquire", "deploy", "--shared", "--reclaim"}, `reclaim "true": must not be combined with --shared or --limit`},
		{[]string{"acquire", "deploy", "--ttl", "1.5s"}, `--ttl "1.5s": must be whole seconds`},
		{[]string{"acquire", "deploy", "--limit", "0"}, `--limit "0": must be 1-`},
		{[]string{"steal", "deploy", "--reason", "r", "--intent-version", "v\x01"}, `intent version "v\x01": must not contain control characters`},
		{[]string{"run", "deploy", "--limit", "2", "--reclaim", "true"}, `reclaim "true": must not be combined with --shared or --limit`},
	} {
		root := filepath.Join(base, "root"+string(rune('a'+i)))
		r := clitest.Run(t, root, c.args...)
		if r.Code != 2 || !strings.Contains(r.Stderr, c.says) {
			t.Errorf("%q: exit %d, stderr %q; want 2 saying %q", c.args, r.Code, r.Stderr, c.says)
		}
		if _, err := os.Stat(root); !os.IsNotExist(err) {
			t.Errorf("%q: the root exists after a refused request (%v)", c.args, err)
		}
	}
	if entries, _ := os.ReadDir(clitest.TrustDir(filepath.Join(base, "roota"))); len(entries) > 0 {
		t.Errorf("the trust store holds %d entries after refused requests, want none", len(entries))
	}
}
