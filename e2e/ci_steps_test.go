package e2e

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/clitest"
)

// step runs script under sh as one CI step would: its own shell, gone when
// the step ends. "$LL" is lockledger.
func step(ctx context.Context, root, script string) *exec.Cmd {
	c := exec.CommandContext(ctx, "sh", "-c", script)
	c.Env = clitest.Env(root, "LL="+clitest.Bin())
	return c
}

// The recipe of docs/ci.md with real processes: one step acquires with
// --holder none and exits, a background step heartbeats, another job
// cannot take the lock meanwhile, and a last step releases it by request
// id; a lock nobody heartbeats goes stale after its TTL and is taken over.
func TestCIStepsHoldALockNoProcessHolds(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// TTLs long enough that a loaded machine's slow processes do not
	// outlast them between the steps that must find the lock held.
	acquire := step(ctx, root, `"$LL" acquire deploy --holder none --ttl 6`)
	r := clitest.Exec(t, acquire)
	if r.Code != 0 {
		t.Fatalf("acquire --holder none: exit %d\n%s", r.Code, r.Stderr)
	}
	rid := strings.TrimSpace(r.Stdout)
	acquired := time.Now()
	if b := lastBody(t, root, "lock_acquired"); b["pid"] != 0.0 || b["request_id"] != rid {
		t.Fatalf("lock_acquired of --holder none: pid %v request %v, want pid 0 and %s", b["pid"], b["request_id"], rid)
	}
	if who := clitest.Must(t, 0, root, "who", "deploy").Stdout; !strings.Contains(who, "process        none: held while heartbeats arrive") {
		t.Fatalf("who does not say that no process holds the lock:\n%s", who)
	}

	// The acquiring step's shell is gone: the lock is not dead for that.
	clitest.Must(t, 3, root, "acquire", "deploy", "--actor", "other-job")

	beats := step(ctx, root, `while "$LL" heartbeat deploy --request-id "$RID"; do sleep 0.2; done; exit 1`)
	beats.Env = append(beats.Env, "RID="+rid)
	if err := beats.Start(); err != nil {
		t.Fatal(err)
	}
	beatsDone := make(chan error, 1)
	go func() { beatsDone <- beats.Wait() }()

	// Held past two TTLs, by heartbeats alone.
	for time.Since(acquired) < 12*time.Second {
		if r := clitest.Run(t, root, "acquire", "deploy", "--actor", "other-job"); r.Code != 3 {
			t.Fatalf("another job's acquire %s after the acquire, heartbeats arriving: exit %d, want 3 (held)\n%s",
				time.Since(acquired).Round(time.Millisecond), r.Code, r.Stderr)
		}
		select {
		case err := <-beatsDone:
			t.Fatalf("the heartbeat step stopped: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	if err := beats.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-beatsDone

	// The release step, by request id, from yet another process.
	release := step(ctx, root, `"$LL" heartbeat deploy --request-id "$RID" && "$LL" release deploy --request-id "$RID"`)
	release.Env = append(release.Env, "RID="+rid)
	if r := clitest.Exec(t, release); r.Code != 0 {
		t.Fatalf("heartbeat and release by request id from another step: exit %d\n%s", r.Code, r.Stderr)
	}
	if b := lastBody(t, root, "lock_released"); b["request_id"] != rid || b["forced"] != false || b["result"] != "success" {
		t.Fatalf("the release step's lock_released: %v", b)
	}

	// Nobody heartbeats: stale after the TTL, then taken over.
	r = clitest.Exec(t, step(ctx, root, `"$LL" acquire deploy --holder none --ttl 5`))
	if r.Code != 0 {
		t.Fatalf("acquire --holder none: exit %d\n%s", r.Code, r.Stderr)
	}
	clitest.Must(t, 3, root, "acquire", "deploy", "--actor", "other-job")
	awaitState(t, root, "deploy", "stale", time.Minute)
	clitest.Must(t, 0, root, "acquire", "deploy", "--force", "--actor", "other-job")
	if b := lastBody(t, root, "lock_stolen"); b["reason"] != "stale_lock_forced" {
		t.Fatalf("take-over of the unheartbeated lock: reason %v, want stale_lock_forced", b["reason"])
	}

	// Other tools' lock files name a holder process: refused, nothing written.
	bso := filepath.Join(t.TempDir(), "sprint.json")
	r = clitest.Must(t, 2, root, "acquire", "sprint", "--holder", "none", "--file", "bso:"+bso)
	if !strings.Contains(r.Stderr, "holder") {
		t.Fatalf("--holder none with --file: the message does not name the holder:\n%s", r.Stderr)
	}
	if _, err := os.Lstat(bso); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("--holder none with --file left %s: %v", bso, err)
	}
	clitest.Verify(t, 0, root)
}
