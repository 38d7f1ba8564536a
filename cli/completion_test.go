package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/cli"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/formats"
	"github.com/lockledger/lockledger/internal/clitest"
)

// complete runs the shell's completion request (cobra's hidden __complete)
// and returns the candidates and the directive.
func complete(t *testing.T, root string, args ...string) ([]string, int) {
	t.Helper()
	r := clitest.Must(t, 0, root, append([]string{"__complete"}, args...)...)
	lines := strings.Split(strings.TrimRight(r.Stdout, "\n"), "\n")
	last := lines[len(lines)-1]
	d, err := strconv.Atoi(strings.TrimPrefix(last, ":"))
	if !strings.HasPrefix(last, ":") || err != nil {
		t.Fatalf("__complete %v: no directive line:\n%s", args, r.Stdout)
	}
	var out []string
	for _, l := range lines[:len(lines)-1] {
		out = append(out, strings.SplitN(l, "\t", 2)[0])
	}
	return out, d
}

// Directives, as cobra numbers them.
const (
	dirNoSpace    = 2
	dirNoFileComp = 4
)

func TestCompleteLockNames(t *testing.T) {
	root := t.TempDir()
	for _, n := range []string{"deploy-prod", "deploy-stage", "db-migrate"} {
		clitest.Must(t, 0, root, "acquire", n)
	}
	rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "nightly").Stdout)
	clitest.Must(t, 0, root, "release", "nightly", "--request-id", rid)
	got, d := complete(t, root, "status", "")
	// A released lock is gone from the locks table and the locks directory.
	if want := []string{"db-migrate", "deploy-prod", "deploy-stage"}; !slices.Equal(got, want) || d != dirNoFileComp {
		t.Fatalf("status <Tab> = %v (directive %d), want %v", got, d, want)
	}
	for _, args := range [][]string{{"release", "dep"}, {"acquire", "dep"}, {"who", "dep"}, {"replay", "--lock", "dep"}} {
		if got, _ := complete(t, root, args...); !slices.Equal(got, []string{"deploy-prod", "deploy-stage"}) {
			t.Errorf("%v <Tab> = %v", args, got)
		}
	}
	if got, _ := complete(t, root, "release", "db-migrate", ""); len(got) != 0 {
		t.Errorf("a second lock name was offered: %v", got)
	}
}

// Completing against a root with no ledger creates nothing there.
func TestCompleteCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	if got, _ := complete(t, missing, "acquire", ""); len(got) != 0 {
		t.Errorf("names from nowhere: %v", got)
	}
	if _, err := os.Lstat(missing); !os.IsNotExist(err) {
		t.Fatalf("completion created the root: %v", err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.MkdirAll(filepath.Join(empty, "locks"), 0o700); err != nil {
		t.Fatal(err)
	}
	// A lock file another tool wrote is a lock name too.
	if err := os.WriteFile(filepath.Join(empty, "locks", "cron.lock"), []byte("pid 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, _ := complete(t, empty, "status", ""); !slices.Equal(got, []string{"cron"}) {
		t.Errorf("status <Tab> = %v, want [cron]", got)
	}
	entries, err := os.ReadDir(empty)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Fatalf("completion left files in the root: %v", entries)
	}
}

func TestCompleteTypesFormatsAndFiles(t *testing.T) {
	root := t.TempDir()
	got, _ := complete(t, root, "timeline", "--type", "")
	var want []string
	for _, ty := range events.Types {
		want = append(want, string(ty))
	}
	if !slices.Equal(got, want) {
		t.Errorf("--type <Tab> = %v, want %v", got, want)
	}
	if got, _ := complete(t, root, "timeline", "--type", "lock_acquired,"); len(got) != len(want) || got[1] != "lock_acquired,"+want[1] {
		t.Errorf("--type lock_acquired,<Tab> = %v", got)
	}
	// Every command with --format completes values its help names.
	cmd := cli.Command()
	n := 0
	for _, c := range cmd.Commands() {
		f := c.Flags().Lookup("format")
		if f == nil {
			continue
		}
		n++
		vals, d := complete(t, root, c.Name(), "--format", "")
		if len(vals) < 2 || d != dirNoFileComp {
			t.Errorf("%s --format <Tab> = %v (directive %d)", c.Name(), vals, d)
		}
		for _, v := range vals {
			if !strings.Contains(f.Usage, v) {
				t.Errorf("%s --format completes %q, which its help (%q) does not name", c.Name(), v, f.Usage)
			}
		}
	}
	if n < 4 {
		t.Fatalf("only %d commands with --format", n)
	}
	got, d := complete(t, root, "acquire", "x", "--file", "")
	want = nil
	for _, name := range formats.Names() {
		want = append(want, name+":")
	}
	if !slices.Equal(got, want) || d != dirNoSpace|dirNoFileComp {
		t.Errorf("acquire --file <Tab> = %v (directive %d), want %v", got, d, want)
	}
	if got, d := complete(t, root, "run", "x", "--file", "beads:"); len(got) != 0 || d != 0 {
		t.Errorf("--file beads:<Tab> = %v (directive %d), want the shell's file completion", got, d)
	}
	if got, _ := complete(t, root, "status", "x", "--file", ""); !slices.Equal(got, []string{"bso:"}) {
		t.Errorf("status --file <Tab> = %v", got)
	}
}

// TestBashCompletesLockNamesWithoutBashCompletion: the script of
// completion bash completes lock names in a bash that has no
// bash-completion package (a fresh machine), as cobra's alone does not.
func TestBashCompletesLockNamesWithoutBashCompletion(t *testing.T) {
	clitest.NeedBinary(t, "bash")
	root := t.TempDir()
	for _, n := range []string{"deploy-prod", "deploy-stage", "db-migrate"} {
		clitest.Must(t, 0, root, "acquire", n)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "lockledger.bash")
	if err := os.WriteFile(script, []byte(clitest.Must(t, 0, root, "completion", "bash").Stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(clitest.Bin(), filepath.Join(dir, "lockledger")); err != nil {
		t.Fatal(err)
	}
	// compopt works only inside a completion bash itself runs; the words
	// are set as bash sets them for "lockledger release dep<TAB>".
	c := exec.Command("bash", "--norc", "--noprofile", "-c", `compopt() { :; }
source "$1"
COMP_WORDS=(lockledger release dep) COMP_CWORD=2 COMP_LINE="lockledger release dep" COMP_POINT=22
__start_lockledger lockledger dep release
printf '%s\n' "${COMPREPLY[@]}"`, "bash", script)
	c.Env = clitest.Env(root, "PATH="+dir+":"+os.Getenv("PATH"))
	out, err := c.CombinedOutput()
	if got := strings.Fields(string(out)); err != nil || !slices.Equal(got, []string{"deploy-prod", "deploy-stage"}) {
		t.Fatalf("release dep<TAB> in a bash without bash-completion = %q (%v), want deploy-prod deploy-stage", out, err)
	}
}
