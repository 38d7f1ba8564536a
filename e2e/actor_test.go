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

// withoutActorEnv is env without USER and LOCKLEDGER_ACTOR, as in a
// container that sets neither.
func withoutActorEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "USER=") && !strings.HasPrefix(kv, "LOCKLEDGER_ACTOR=") {
			out = append(out, kv)
		}
	}
	return out
}

// TestActorDefaultsToTheOSUser: with neither $USER nor LOCKLEDGER_ACTOR
// set, the actor recorded is the OS user's name, and the uid when the
// user database has no name for it; never "unknown".
func TestActorDefaultsToTheOSUser(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "r")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := clitest.Command(ctx, root, "acquire", "deploy", "--pid", strconv.Itoa(os.Getpid()))
	c.Env = withoutActorEnv(c.Env)
	if r := clitest.Exec(t, c); r.Code != 0 {
		t.Fatalf("acquire without USER: exit %d\n%s", r.Code, r.Stderr)
	}
	want := userName(os.Getuid())
	if want == "" {
		want = strconv.Itoa(os.Getuid())
	}
	if evs := eventUsers(t, root); len(evs) != 1 || evs[0].Actor != want {
		t.Fatalf("events %+v, want one whose actor is %q", evs, want)
	}

	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: needs root to run lockledger as a uid the user database does not know (runs as root in CI)")
	}
	const nameless = 54399
	if userName(nameless) != "" {
		t.Skipf("SKIPPED: uid %d has a name here", nameless)
	}
	dir, bin := binForOthers(t)
	base := filepath.Join(dir, "roots")
	if err := os.Mkdir(base, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o777); err != nil {
		t.Fatal(err)
	}
	root2 := filepath.Join(base, "r")
	c = exec.CommandContext(ctx, bin, "acquire", "deploy")
	c.Env = append(withoutActorEnv(clitest.Env(root2)), clitest.TrustDirAs(t, root2, nameless))
	c.Dir = "/"
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nameless, Gid: nameless}}
	if r := clitest.Exec(t, c); r.Code != 0 {
		t.Fatalf("acquire as uid %d without USER: exit %d\n%s", nameless, r.Code, r.Stderr)
	}
	if evs := eventUsers(t, root2); len(evs) != 1 || evs[0].Actor != strconv.Itoa(nameless) {
		t.Fatalf("events %+v, want one whose actor is %d", evs, nameless)
	}
}
