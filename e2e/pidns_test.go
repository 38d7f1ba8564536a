package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
)

// A pid recorded in one PID namespace names another process, or none, in
// another: a contender there must not take a live holder's lock as dead.
// Both run as the same user on the same root, host id, machine and boot.

func TestContenderInAnotherPIDNamespaceDoesNotTakeALiveHoldersLock(t *testing.T) {
	t.Parallel()
	needPIDNamespaces(t)
	root := t.TempDir()
	_, lines := startRun(t, root, "pidns-lock", "--", "sh", "-c", "echo held; exec sleep 300")
	if l := line(t, lines); l != "held" {
		t.Fatalf("holder printed %q", l)
	}
	r := clitest.Exec(t, inNewPIDNamespace(clitest.Command(context.Background(), root, "run", "pidns-lock", "--", "true")))
	if r.Code != 3 {
		t.Fatalf("a run in another PID namespace exited %d, want 3 (held): %s", r.Code, r.Stderr)
	}
	assertHeldBy(t, root, "pidns-lock", "lock_acquired")
	// Seen from the other namespace, status names why the pid says nothing.
	r = clitest.Exec(t, inNewPIDNamespace(clitest.Command(context.Background(), root, "status", "pidns-lock", "--json")))
	var st struct {
		State    string `json:"state"`
		Unprobed string `json:"unprobed"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &st); err != nil || st.State != "held" || st.Unprobed != "other_pid_namespace" {
		t.Fatalf("status from another PID namespace: %v %q (%s)", err, r.Stdout, r.Stderr)
	}
}

func TestContenderOutsideAHoldersPIDNamespaceDoesNotTakeItsLock(t *testing.T) {
	t.Parallel()
	needPIDNamespaces(t)
	root := t.TempDir()
	// The holder is the shell, pid 1 of its namespace: outside, pid 1 is
	// another, live process with another start time.
	c := inNewPIDNamespace(exec.Command("sh", "-c", `"$0" acquire pidns-lock --ttl 300 >/dev/null && echo held && exec sleep 300`, clitest.Bin()))
	c.Env = clitest.Env(root)
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	buf := make([]byte, 5)
	if n, err := out.Read(buf); err != nil || string(buf[:n]) != "held\n" {
		t.Fatalf("holder printed %q (%v)", buf[:n], err)
	}
	r := clitest.Run(t, root, "run", "pidns-lock", "--", "true")
	if r.Code != 3 {
		t.Fatalf("a run outside the holder's PID namespace exited %d, want 3 (held): %s", r.Code, r.Stderr)
	}
	assertHeldBy(t, root, "pidns-lock", "lock_acquired")
}

// needPIDNamespaces skips the test, loudly, where a new PID namespace with
// its own /proc cannot be made (unshare missing or refused); under CI
// (LOCKLEDGER_CI=1, which runs as root) it fails instead.
func needPIDNamespaces(t *testing.T) {
	t.Helper()
	clitest.NeedBinary(t, "unshare")
	if out, err := inNewPIDNamespace(exec.Command("true")).CombinedOutput(); err != nil {
		if os.Getenv("LOCKLEDGER_CI") == "1" {
			t.Fatalf("unshare --pid --fork --mount-proc --kill-child is refused (%v: %s), and CI requires every test to run", err, out)
		}
		t.Skipf("SKIPPED: unshare --pid --fork --mount-proc --kill-child is refused here (%v: %s), so this test cannot run", err, out)
	}
}

// inNewPIDNamespace makes c run as pid 1 of a new PID namespace, with that
// namespace's /proc mounted in a new mount namespace; the namespace ends
// (its every process killed) when unshare does.
func inNewPIDNamespace(c *exec.Cmd) *exec.Cmd {
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		unshare = "unshare"
	}
	c.Args = append([]string{unshare, "--pid", "--fork", "--mount-proc", "--kill-child", c.Path}, c.Args[1:]...)
	c.Path = unshare
	c.Err = nil
	return c
}

// assertHeldBy checks that the lock is held and that the last event of it
// that changed its holder is of type want (no take-over happened).
func assertHeldBy(t *testing.T, root, lock, want string) {
	t.Helper()
	clitest.Must(t, 3, root, "status", lock, "--check")
	types := clitest.Strings(t, root, `SELECT type FROM events WHERE lock_name = '`+lock+`' AND type IN ('lock_acquired', 'lock_stolen', 'lock_released') ORDER BY seq`)
	if len(types) != 1 || types[0] != want {
		t.Fatalf("the lock's holders changed: %v", types)
	}
}
