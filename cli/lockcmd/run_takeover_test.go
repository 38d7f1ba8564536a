package lockcmd_test

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/clitest"
)

// TestRunSaysWhomItTookTheLockFrom: a run that takes a lock over (a dead
// holder at once, a stale one with --force) says so on its warning line,
// naming the reason and the holding it ended, as acquire does; its
// "acquired" line alone read like a free lock's.
func TestRunSaysWhomItTookTheLockFrom(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")

	// A stale holder: no process, its TTL run out.
	stale := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "stale", "--holder", "none", "--ttl", "1s", "--actor", "nightly").Stdout)
	deadline := time.Now().Add(30 * time.Second)
	for clitest.Run(t, root, "status", "stale", "--check").Code != 4 {
		if time.Now().After(deadline) {
			t.Fatal("the lock never went stale")
		}
		time.Sleep(100 * time.Millisecond)
	}
	r := clitest.Must(t, 0, root, "run", "stale", "--force", "--", "true")
	for _, want := range []string{"WRN took over lock", "reason=stale_lock_forced", "previous=" + stale, "previous_actor=nightly"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("run --force of a stale lock: stderr lacks %q:\n%s", want, r.Stderr)
		}
	}

	// A dead holder: its process has exited.
	holder := exec.Command("sleep", "600")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	dead := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "dead", "--pid", strconv.Itoa(holder.Process.Pid), "--actor", "gone").Stdout)
	if err := holder.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = holder.Wait()
	r = clitest.Must(t, 0, root, "run", "dead", "--", "true")
	for _, want := range []string{"WRN took over lock", "reason=holder_dead", "previous=" + dead, "previous_actor=gone"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("run of a lock whose holder died: stderr lacks %q:\n%s", want, r.Stderr)
		}
	}

	// A free lock is only acquired.
	if r := clitest.Must(t, 0, root, "run", "free", "--", "true"); strings.Contains(r.Stderr, "took over") || !strings.Contains(r.Stderr, "INF acquired") {
		t.Errorf("run of a free lock:\n%s", r.Stderr)
	}
}
