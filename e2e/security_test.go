package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
)

// TestSecurityFilesArePrivateUnderUmaskZero: with umask 000 (so that any
// mode the code asks for shows through unreduced) a fresh root gets a 0700
// root and locks/, and 0600 ledger.db, ledger.db-wal, ledger.db-shm,
// writer.flock and lock files, including a lock file replaced by a steal.
// The WAL and shared-memory files exist only while a process has the
// database open, so a `run` child looks at them.
func TestSecurityFilesArePrivateUnderUmaskZero(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "fresh")
	self := strconv.Itoa(os.Getpid())
	umask0 := func(args string) string {
		t.Helper()
		c := exec.Command("sh", "-c", `umask 000; exec "$LL" `+args)
		c.Env = append(clitest.Env(root), "LL="+clitest.Bin(), "ROOT="+root, "PID="+self)
		r := clitest.Exec(t, c)
		if r.Code != 0 {
			t.Fatalf("%s: exit %d\n%s", args, r.Code, r.Stderr)
		}
		return r.Stdout
	}
	paths := []string{root, root + "/locks", root + "/ledger.db", root + "/ledger.db-wal", root + "/ledger.db-shm",
		root + "/writer.flock", root + "/locks/job.lock"}
	out := umask0(`run job -- sh -c 'umask; stat -c "%n %a" "$ROOT" "$ROOT/locks" "$ROOT/ledger.db" "$ROOT/ledger.db-wal" "$ROOT/ledger.db-shm" "$ROOT/writer.flock" "$ROOT/locks/job.lock"'`)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(paths)+1 || strings.TrimLeft(lines[0], "0") != "" {
		t.Fatalf("child of run saw:\n%s\nwant umask 0000 and a mode for each of %v", out, paths)
	}
	for i, p := range paths {
		want := "600"
		if i < 2 {
			want = "700"
		}
		if got := lines[i+1]; got != p+" "+want {
			t.Errorf("while run holds the lock: %q, want %s %s", got, p, want)
		}
	}
	rid := strings.TrimSpace(umask0(`acquire other --pid "$PID"`))
	umask0(`steal other --active --yes --reason "mode check" --pid "$PID"`)
	umask0(`acquire third --pid "$PID"`)
	for _, p := range []string{root + "/locks/other.lock", root + "/locks/third.lock", root + "/ledger.db", root + "/writer.flock"} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want 0600", p, fi.Mode(), err)
		}
	}
	for _, d := range []string{root, root + "/locks"} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v, want 0700", d, fi.Mode(), err)
		}
	}
	if rid == "" {
		t.Fatal("acquire printed no request id")
	}
}

// TestSecurityModesAreSetAtCreationNotAfter proves the "not chmod after"
// half: under strace, with umask 000, every file the CLI creates in the
// root is created by open(O_CREAT) with mode 0600 and every directory by
// mkdir with mode 0700, and no chmod-family call is ever made. (A
// create-then-chmod would leave a window in which another user could open
// the file.)
func TestSecurityModesAreSetAtCreationNotAfter(t *testing.T) {
	t.Parallel()
	clitest.NeedBinary(t, "strace")
	root := filepath.Join(t.TempDir(), "fresh")
	traceDir := t.TempDir()
	trace := filepath.Join(traceDir, "trace")
	script := `umask 000
"$LL" acquire a --pid $$ >/dev/null || exit 1
"$LL" steal a --active --yes --reason strace --pid $$ >/dev/null || exit 1
"$LL" run b -- true || exit 1
"$LL" release a --force --yes --reason cleanup`
	// -y prints the path of every descriptor, so that a call relative to
	// a directory descriptor (openat2, mkdirat) names the file it creates.
	c := exec.Command("strace", "-ff", "-qq", "-ttt", "-y", "-o", trace, "-e", "trace=%file,fchmod", "sh", "-c", script)
	c.Env = append(clitest.Env(root), "LL="+clitest.Bin())
	if out, err := c.CombinedOutput(); err != nil {
		if strings.Contains(string(out), "ptrace") || strings.Contains(string(out), "Operation not permitted") {
			t.Skipf("strace cannot trace here: %s", out)
		}
		t.Fatalf("traced run: %v\n%s", err, out)
	}
	// -ff writes one file per process, so no call is split across lines;
	// -ttt stamps each call, so that the processes' calls can be merged in
	// the order they happened.
	parts, err := filepath.Glob(trace + ".*")
	if err != nil || len(parts) == 0 {
		t.Fatalf("no trace files: %v", err)
	}
	var lines []string
	for _, p := range parts {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.Split(strings.TrimSpace(string(b)), "\n")...)
	}
	sort.SliceStable(lines, func(i, j int) bool {
		a, _ := strconv.ParseFloat(strings.Fields(lines[i] + " 0")[0], 64)
		b, _ := strconv.ParseFloat(strings.Fields(lines[j] + " 0")[0], 64)
		return a < b
	})
	data := []byte(strings.Join(lines, "\n"))
	call := regexp.MustCompile(`^[0-9.]+ (\w+)\((.*)\)\s+=\s+(-?\d+)`)
	// The path: the first quoted argument, below the directory of the
	// descriptor before it where it is relative (an *at call).
	pathArg := regexp.MustCompile(`^(?:[A-Z_]*-?\d*<([^>]*)>, )?"([^"]*)"`)
	howMode := regexp.MustCompile(`mode=(0\d+)`)
	created := map[string]bool{}
	var checked, chmods int
	for _, line := range strings.Split(string(data), "\n") {
		m := call.FindStringSubmatch(line)
		if m == nil || m[3] == "-1" && !strings.Contains(m[1], "chmod") {
			continue
		}
		name, args := m[1], m[2]
		if strings.Contains(name, "chmod") {
			chmods++
			t.Errorf("chmod-family call: %s", line)
			continue
		}
		pm := pathArg.FindStringSubmatch(args)
		if pm == nil {
			continue
		}
		p := pm[2]
		if !filepath.IsAbs(p) {
			p = filepath.Join(pm[1], p)
		}
		if !strings.HasPrefix(p, root) {
			continue
		}
		fields := strings.Split(args, ", ")
		mode := fields[len(fields)-1]
		if hm := howMode.FindStringSubmatch(args); name == "openat2" && hm != nil {
			mode = hm[1]
		}
		switch {
		case strings.HasPrefix(name, "mkdir"):
			checked++
			if mode != "0700" {
				t.Errorf("directory created with mode %s: %s", mode, line)
			}
			created[p] = true
		case strings.HasPrefix(name, "open") || name == "creat":
			if name != "creat" && !strings.Contains(args, "O_CREAT") {
				continue
			}
			checked++
			switch {
			case mode == "0600":
				created[p] = true
			case strings.Contains(args, "O_EXCL") || !created[p]:
				// SQLite opens ledger.db with O_CREAT|0644, but only after
				// the ledger created it 0600 with O_EXCL: that is fine. A
				// path opened O_CREAT with another mode before it was known
				// to exist could have been created with that mode.
				t.Errorf("file possibly created with mode %s: %s", mode, line)
			}
		}
	}
	if checked < 6 {
		t.Fatalf("only %d creating calls under the root were traced; is the trace complete?\n%s", checked, data)
	}
	for _, want := range []string{root, root + "/locks", root + "/ledger.db", root + "/writer.flock", root + "/ledger.db-wal",
		root + "/ledger.db-shm", root + "/locks/.a.lock.pending"} {
		if !created[want] {
			t.Errorf("no creating call for %s was seen in the trace", want)
		}
	}
	t.Logf("%d creating calls checked, %d chmod calls", checked, chmods)
}
