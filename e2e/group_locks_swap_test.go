package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/clitest"
)

// TestGroupMemberSwappingLocksForASymlink: a member of a --group root may
// rename ROOT/locks and put a symlink in its place (the root is 2770).
// Bob flipped locks/ between the directory and a symlink to a directory
// only root (the user) may write, while root ran acquires in the shared
// root, and root created v7.lock and its journal there. Acquires may fail
// while locks/ is not the directory; none writes through the symlink.
func TestGroupMemberSwappingLocksForASymlink(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: needs root to run a group member as another user (runs as root in CI)")
	}
	clitest.NeedBinary(t, "sh", "mv", "ln", "rm")
	dir := t.TempDir()
	for d := dir; d != "/" && d != os.TempDir() && d != "."; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	root := filepath.Join(dir, "team-root")
	clitest.Must(t, 0, root, "--group", strconv.Itoa(teamGID), "acquire", "deploy")
	private := filepath.Join(dir, "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	stop := filepath.Join(dir, "stop")

	// Bob's loop: locks/ to locks.real, a symlink in its place, then back
	// (mv -T replaces a locks/ an open made meanwhile, where it is empty).
	// It ends when told to, after the acquires, however long a loaded
	// machine takes for them; the context only ends a loop left behind.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bob := exec.CommandContext(ctx, "sh", "-c", `cd "$1" || exit 1
while [ ! -e "$2" ]; do
	mv -T locks locks.real 2>/dev/null || continue
	ln -s "$3" locks && echo flip
	until mv -T locks.real locks 2>/dev/null; do rm -rf locks; done
done`, "bob", root, stop, private)
	bob.Dir = "/"
	bob.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: bobUID, Gid: bobUID, Groups: []uint32{teamGID}}}
	var flips, bobErr strings.Builder
	bob.Stdout, bob.Stderr = &flips, &bobErr
	if err := bob.Start(); err != nil {
		t.Fatal(err)
	}
	const acquires = 40
	ok := 0
	for i := range acquires {
		if clitest.Run(t, root, "acquire", "v"+strconv.Itoa(i)).Code == 0 {
			ok++
		}
	}
	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := bob.Wait(); err != nil {
		t.Fatalf("bob's loop: %v\n%s", err, bobErr.String())
	}
	n := strings.Count(flips.String(), "flip")
	t.Logf("%d flips; %d of %d acquires succeeded", n, ok, acquires)
	if n < 10 {
		t.Fatalf("locks/ became a symlink only %d times during the acquires", n)
	}
	entries, err := os.ReadDir(private)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) > 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("root's acquires wrote through bob's symlink into %s (mode 0700, root's): %s", private, strings.Join(names, ", "))
	}
	// With locks/ back, the root works again.
	clitest.Must(t, 0, root, "acquire", "after")
}
