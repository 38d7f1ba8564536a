package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/termtext"
)

// inDir runs lockledger ARGS... from directory dir with env.
func inDir(t *testing.T, dir string, env []string, args ...string) clitest.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, clitest.Bin(), args...)
	c.Env, c.Dir = env, dir
	return clitest.Exec(t, c)
}

// absent fails the test if path exists.
func absent(t *testing.T, path, why string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s: %s exists (%v)", why, path, err)
	}
}

// A cron job (cwd /) and the same script run by hand from $HOME, with the
// same HOME and no root given, take the same lock in the same ledger: one
// excludes the other. Nothing is written where either stood.
func TestDefaultRootIsTheSameFromEveryDirectory(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	env := defaultRootEnv(home)
	_, hadSlash := os.Lstat("/.lockledger")
	_, hadHome := os.Lstat(filepath.Join(home, ".lockledger"))
	self := strconv.Itoa(os.Getpid())
	if r := inDir(t, "/", env, "acquire", "nightly", "--pid", self); r.Code != 0 {
		t.Fatalf("acquire from /: exit %d\n%s", r.Code, r.Stderr)
	}
	r := inDir(t, home, env, "acquire", "nightly", "--pid", self)
	if r.Code != 3 {
		t.Fatalf("acquire from $HOME while the cron job holds the lock: exit %d, want 3\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
	}
	root := filepath.Join(home, ".local", "state", "lockledger")
	if got := clitest.EventCount(t, root); got != 2 {
		t.Errorf("%s holds %d events, want 2 (the acquire and the blocked one)", root, got)
	}
	if errors.Is(hadSlash, fs.ErrNotExist) {
		absent(t, "/.lockledger", "a command run from / wrote there")
	}
	if errors.Is(hadHome, fs.ErrNotExist) {
		absent(t, filepath.Join(home, ".lockledger"), "a command run from $HOME wrote there")
	}
	for _, d := range []string{filepath.Join(home, ".local"), filepath.Join(home, ".local", "state"), root} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, want a directory 0700 (%v)", d, fi.Mode(), err)
		}
	}

	// $XDG_STATE_HOME, when absolute, holds the root instead; a relative
	// one is ignored, as the XDG spec says.
	state := t.TempDir()
	inDir(t, "/", append(env, "XDG_STATE_HOME="+state), "acquire", "xdg", "--pid", self)
	if clitest.EventCount(t, filepath.Join(state, "lockledger")) != 1 {
		t.Errorf("XDG_STATE_HOME=%s: the lock was not recorded in %s/lockledger", state, state)
	}
	if r := inDir(t, home, append(env, "XDG_STATE_HOME=relative"), "acquire", "nightly", "--pid", self); r.Code != 3 {
		t.Errorf("XDG_STATE_HOME=relative: exit %d, want 3 (the ledger in ~/.local/state)\n%s", r.Code, r.Stderr)
	}
	absent(t, filepath.Join(home, "relative"), "a relative XDG_STATE_HOME was used")
	// LOCKLEDGER_ROOT and --root come first, in that order.
	env2 := append(env, "LOCKLEDGER_ROOT="+filepath.Join(home, "team"))
	inDir(t, "/", env2, "acquire", "nightly", "--pid", self)
	inDir(t, "/", env2, "--root", filepath.Join(home, "explicit"), "acquire", "nightly", "--pid", self)
	for _, d := range []string{"team", "explicit"} {
		if clitest.EventCount(t, filepath.Join(home, d)) != 1 {
			t.Errorf("the lock taken with %s was not recorded there", d)
		}
	}
}

// With no HOME and no passwd entry for the uid there is no default root:
// a command that needs one says to give --root or LOCKLEDGER_ROOT (exit
// 2); one that needs none runs.
func TestNoHomeNoDefaultRoot(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run as a uid with no passwd entry")
	}
	const uid = 54321
	if _, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		t.Skipf("uid %d has a passwd entry here", uid)
	}
	dir, bin := binForOthers(t)
	run := func(args ...string) clitest.Result {
		c := exec.Command(bin, args...)
		for _, kv := range defaultRootEnv("") {
			if !strings.HasPrefix(kv, "HOME=") {
				c.Env = append(c.Env, kv)
			}
		}
		c.Dir = dir
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		return clitest.Exec(t, c)
	}
	for _, args := range [][]string{{"status", "x"}, {"acquire", "x"}, {"list", "--json"}} {
		r := run(args...)
		if r.Code != 2 || !strings.Contains(r.Stderr, "--root") || !strings.Contains(r.Stderr, "LOCKLEDGER_ROOT") ||
			!strings.Contains(r.Stderr, "no home directory") {
			t.Errorf("%v with no home: exit %d, want 2 asking for --root or LOCKLEDGER_ROOT\nstdout: %s\nstderr: %s", args, r.Code, r.Stdout, r.Stderr)
		}
	}
	for _, args := range [][]string{{"version"}, {"__complete", "status", ""}} {
		if r := run(args...); r.Code != 0 {
			t.Errorf("%v with no home: exit %d\n%s", args, r.Code, r.Stderr)
		}
	}
	absent(t, filepath.Join(dir, ".lockledger"), "a command with no home wrote in its cwd")
}

// cd /tmp && lockledger status X on a user with no ledger: exit 6 and
// "no ledger at PATH; nothing was ever recorded there", never "free";
// nothing created, neither in /tmp nor in the state directory.
func TestStatusWithNoLedgerSaysSo(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	_, had := os.Lstat("/tmp/.lockledger")
	r := inDir(t, "/tmp", defaultRootEnv(home), "status", "deploy-prod")
	root := filepath.Join(home, ".local", "state", "lockledger")
	want := "lockledger: no ledger at " + root + "; nothing was ever recorded there"
	if r.Code != 6 || !strings.HasPrefix(r.Stderr, want) || strings.Contains(r.Stdout+r.Stderr, "free") {
		t.Fatalf("status with no ledger: exit %d, want 6 and %q\nstdout: %s\nstderr: %s", r.Code, want, r.Stdout, r.Stderr)
	}
	absent(t, filepath.Join(home, ".local"), "status created the state directory")
	if errors.Is(had, fs.ErrNotExist) {
		absent(t, "/tmp/.lockledger", "status created a root in its cwd")
	}
}

// Every read command on a root with no ledger says so, with exit 6, the
// root's path (escaped) and, with --json, the kind no_ledger; none creates
// the root.
func TestEveryReadSaysNoLedger(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	checkpoint := filepath.Join(dir, "cp.note")
	if err := os.WriteFile(checkpoint, []byte("not a checkpoint\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reads := [][]string{
		{"status", "deploy"}, {"status", "deploy", "--check"}, {"list"}, {"who", "deploy"}, {"history", "deploy"},
		{"timeline"}, {"timeline", "--lock", "deploy", "--format", "json"}, {"replay"}, {"verify"},
		{"export"}, {"export", "-o", filepath.Join(dir, "out.jsonl")}, {"prove", "event", "1", "--checkpoint", checkpoint},
		{"project"},
	}
	for _, name := range []string{"missing", "bell\a\x1b[31mred"} {
		root := filepath.Join(dir, name)
		shown := termtext.Escape(root)
		for _, args := range reads {
			r := clitest.Run(t, root, args...)
			want := "no ledger at " + shown + "; nothing was ever recorded there"
			if r.Code != 6 || !strings.Contains(r.Stderr, want) || strings.ContainsAny(r.Stderr, "\a\x1b") || strings.Contains(r.Stdout, "free") {
				t.Errorf("%v on %q: exit %d, want 6 and %q\nstdout: %s\nstderr: %q", args, name, r.Code, want, r.Stdout, r.Stderr)
			}
			r = clitest.Run(t, root, append(args, "--json")...)
			var o map[string]any
			if err := json.Unmarshal([]byte(r.Stdout), &o); err != nil || r.Code != 6 || o["error"] != "no_ledger" || o["where"] != root {
				t.Errorf("%v --json on %q: exit %d, %v, want exit 6 and no_ledger at the root\nstdout: %s", args, name, r.Code, err, r.Stdout)
			}
			absent(t, root, strings.Join(args, " ")+" created the root")
		}
	}
}

// defaultRootEnv is the CLI's environment with no root given
// (LOCKLEDGER_ROOT, XDG_STATE_HOME unset) and HOME set to home, so that
// the CLI takes its default root.
func defaultRootEnv(home string) []string {
	var env []string
	for _, kv := range clitest.Env("") {
		if strings.HasPrefix(kv, "LOCKLEDGER_ROOT=") || strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "XDG_STATE_HOME=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home)
}
