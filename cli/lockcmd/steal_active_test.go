package lockcmd_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
)

// TestStealOfAnActiveHolderSaysActive: a steal without --active of a lock
// whose holding is active is refused (exit 3) in the words of --active and
// of the exit code's table; it said "the holder is alive" of a holding no
// process holds (--holder none), which is active by its heartbeats.
func TestStealOfAnActiveHolderSaysActive(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	clitest.Must(t, 0, root, "acquire", "ci", "--holder", "none", "--ttl", "10m")
	r := clitest.Run(t, root, "steal", "ci", "--reason", "runner gone", "--yes")
	if r.Code != 3 || !strings.Contains(r.Stderr, "; the holder is active: take it anyway with steal --active") {
		t.Errorf("steal of an active holding: exit %d, stderr %q", r.Code, r.Stderr)
	}
}
