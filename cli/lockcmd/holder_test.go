package lockcmd_test

import (
	"context"
	"encoding/json"
	"os"
	osexec "os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/clitest"
)

// runWrapped runs wrapper... lockledger args... on root.
func runWrapped(t *testing.T, root string, wrapper []string, args ...string) clitest.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	argv := append(append(append([]string{}, wrapper[1:]...), clitest.Bin()), args...)
	c := osexec.CommandContext(ctx, wrapper[0], argv...)
	c.Env = clitest.Env(root)
	return clitest.Exec(t, c)
}

func holderOf(t *testing.T, root, lock string) int {
	t.Helper()
	r := clitest.Must(t, 0, root, "status", lock, "--json")
	var st struct {
		Lock struct {
			PID int `json:"pid"`
		} `json:"lock"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r.Stdout)
	}
	return st.Lock.PID
}

// A script that ends right after lockledger ("sh -c 'lockledger acquire
// x; ...'") leaves a lock nobody holds: the warning says so, from the
// watcher that outlives the acquire, with --quiet too (an error line: the
// caller must act on it).
func TestHolderThatExitsIsWarnedAbout(t *testing.T) {
	clitest.NeedBinary(t, "sh")
	root := t.TempDir()
	for i, quiet := range [][]string{nil, {"--quiet"}} {
		lock := "x" + strconv.Itoa(i)
		// "; true" keeps sh from exec'ing lockledger in its own place.
		r := runWrapped(t, root, []string{"sh", "-c", `"$0" "$@"; true`}, append([]string{"acquire", lock}, quiet...)...)
		if r.Code != 0 {
			t.Fatalf("acquire %v: exit %d\n%s", quiet, r.Code, r.Stderr)
		}
		if !strings.Contains(r.Stderr, "exited within 1s of the acquire") || !strings.Contains(r.Stderr, "--holder parent") ||
			!strings.Contains(r.Stderr, "holder=sh") || !strings.Contains(r.Stderr, "ERR") {
			t.Fatalf("acquire %v: no error line about the holder that exited:\n%s", quiet, r.Stderr)
		}
	}
	// The same script recording its parent: held by this test process.
	r := runWrapped(t, root, []string{"sh", "-c", `"$0" "$@"; true`}, "acquire", "y", "--holder", "parent")
	if r.Code != 0 || strings.Contains(r.Stderr, "holder recorded") {
		t.Fatalf("acquire --holder parent: exit %d\n%s", r.Code, r.Stderr)
	}
	if got := holderOf(t, root, "y"); got != os.Getpid() {
		t.Fatalf("holder of y = %d, want this test process %d", got, os.Getpid())
	}
}

// A wrapper that exits with lockledger (timeout) is named at once, with
// --quiet too.
func TestHolderUnderTimeout(t *testing.T) {
	clitest.NeedBinary(t, "timeout")
	root := t.TempDir()
	for i, quiet := range [][]string{nil, {"--quiet"}} {
		lock := "x" + strconv.Itoa(i)
		r := runWrapped(t, root, []string{"timeout", "60"}, append([]string{"acquire", lock}, quiet...)...)
		if r.Code != 0 || !strings.Contains(r.Stderr, "wrapper that exits when lockledger does") || !strings.Contains(r.Stderr, "holder=timeout") ||
			!strings.Contains(r.Stderr, "ERR") {
			t.Fatalf("acquire %v under timeout: exit %d, want an error line naming timeout:\n%s", quiet, r.Code, r.Stderr)
		}
	}
	r := runWrapped(t, root, []string{"timeout", "60"}, "acquire", "y", "--holder", "parent")
	if r.Code != 0 || strings.Contains(r.Stderr, "holder recorded") {
		t.Fatalf("acquire --holder parent under timeout: exit %d\n%s", r.Code, r.Stderr)
	}
	if got := holderOf(t, root, "y"); got != os.Getpid() {
		t.Fatalf("holder of y = %d, want this test process %d", got, os.Getpid())
	}
}

func TestHolderDefaultAndInvalid(t *testing.T) {
	root := t.TempDir()
	for _, args := range [][]string{{"acquire", "a"}, {"acquire", "b", "--holder", "self"}} {
		r := clitest.Must(t, 0, root, args...)
		if strings.Contains(r.Stderr, "holder recorded") {
			t.Errorf("%v warned:\n%s", args, r.Stderr)
		}
		if got := holderOf(t, root, args[1]); got != os.Getpid() {
			t.Errorf("%v: holder %d, want %d", args, got, os.Getpid())
		}
	}
	for _, args := range [][]string{
		{"acquire", "c", "--holder", "grandparent"},
		{"acquire", "c", "--holder", "parent", "--pid", strconv.Itoa(os.Getpid())},
	} {
		r := clitest.Must(t, 2, root, args...)
		if !strings.Contains(r.Stderr, "--holder") {
			t.Errorf("%v: message does not name --holder:\n%s", args, r.Stderr)
		}
	}
}
