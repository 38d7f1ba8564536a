package e2e

import (
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/lockledger/lockledger/formats"
	"github.com/lockledger/lockledger/internal/clitest"
)

// appDB creates an SQLite database of another application at path: a
// table users with one row.
func appDB(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
		INSERT INTO users (name) VALUES ('alice')`); err != nil {
		t.Fatal(err)
	}
}

// notALock writes the files a --file target may point at by mistake, in
// dir, and returns their paths by what they are.
func notALock(t *testing.T, dir string) map[string]string {
	t.Helper()
	passwd, err := os.ReadFile("/etc/passwd")
	if err != nil || len(passwd) == 0 {
		passwd = []byte("root:x:0:0:root:/root:/bin/bash\n")
	}
	random := make([]byte, 4096)
	_, _ = rand.Read(random)
	files := map[string][]byte{
		"config.yaml": []byte("server:\n  port: 8080\npid: 4242\nstarted_at: 2026-02-07T22:30:00Z\n"),
		"passwd":      passwd,
		"random":      random,
		"empty":       {},
		"state.json":  []byte(`{"issueNumber": 42, "acquiredAt": "2026-02-07T22:30:00.123Z", "title": "not a lock"}` + "\n"),
	}
	out := map[string]string{}
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		out[name] = p
	}
	out["app.db"] = filepath.Join(dir, "app.db")
	appDB(t, out["app.db"])
	return out
}

// A --file target that holds anything but nothing, the ledger's own file
// or a lock of its format is refused with exit 2 naming the path, and
// neither the file nor the ledger changes: not ledger.db or its WAL (also
// reached through a symlinked directory), not a YAML config, a copy of
// /etc/passwd, random bytes, an empty file, an SQLite database of another
// application, for every format, with --force and with steal --active.
func TestTargetsThatAreNotLocksAreRefusedAndLeftAlone(t *testing.T) {
	t.Parallel()
	root, dir := t.TempDir(), t.TempDir()
	self := strconv.Itoa(os.Getpid())
	clitest.Must(t, 0, root, "acquire", "seed", "--pid", self)
	victims := notALock(t, dir)
	victims["ROOT/ledger.db"] = filepath.Join(root, "ledger.db")
	victims["ROOT/ledger.db-wal"] = filepath.Join(root, "ledger.db-wal")
	victims["ROOT/writer.flock"] = filepath.Join(root, "writer.flock")
	alias := filepath.Join(dir, "alias")
	if err := os.Symlink(root, alias); err != nil {
		t.Fatal(err)
	}
	victims["ledger.db through a symlinked directory"] = filepath.Join(alias, "ledger.db")
	victims["ledger.db-wal through a symlinked directory"] = filepath.Join(alias, "ledger.db-wal")
	if _, err := os.Stat(victims["ROOT/ledger.db-wal"]); err != nil {
		t.Fatalf("the CLI leaves its WAL for the next process; none here: %v", err)
	}
	sums := map[string]string{}
	for _, p := range victims {
		sums[p] = fileSum(t, p)
	}
	before := snapLedger(t, root)
	modes := [][]string{
		{"acquire", "42", "--force", "--pid", self},
		{"steal", "42", "--active", "--yes", "--reason", "test", "--pid", self},
	}
	for _, format := range formats.Names() {
		for what, p := range victims {
			for _, mode := range modes {
				if mode[0] == "steal" && what != "passwd" && what != "ROOT/ledger.db" {
					continue // steal takes the same path as acquire; two victims show it
				}
				args := append(append([]string{}, mode...), "--file", format+":"+p)
				r := clitest.Run(t, root, args...)
				if r.Code != 2 || !strings.Contains(r.Stderr, p) {
					t.Errorf("%s over %s (%s): exit %d, want 2 naming the path\nstderr: %s", mode[0], what, format, r.Code, r.Stderr)
				}
				if got := fileSum(t, p); got != sums[p] {
					t.Fatalf("%s over %s (%s) changed the file", mode[0], what, format)
				}
			}
		}
	}
	if after := snapLedger(t, root); after != before {
		t.Fatalf("refused acquisitions changed the ledger: %s -> %s", before, after)
	}
	// A path inside the root that does not exist yet is refused too.
	r := clitest.Run(t, root, "acquire", "42", "--pid", self, "--file", "bso:"+filepath.Join(root, ".sprint-running"))
	if r.Code != 2 || !strings.Contains(r.Stderr, "inside the ledger's root") {
		t.Fatalf("a target in the root: exit %d\n%s", r.Code, r.Stderr)
	}
	if v := clitest.Run(t, root, "verify"); v.Code != 0 {
		t.Fatalf("verify after the refusals: exit %d\n%s%s", v.Code, v.Stdout, v.Stderr)
	}
}

// Once the ledger's own target file has been replaced by something else,
// no heartbeat, release or take-over by the ledger overwrites or removes
// it: heartbeats and the release leave it, and an acquire that would take
// the path over is refused.
func TestATargetReplacedBySomethingElseIsNeverOverwrittenOrRemoved(t *testing.T) {
	t.Parallel()
	self := strconv.Itoa(os.Getpid())
	passwd := []byte("root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
	for _, format := range formats.Names() {
		t.Run(format, func(t *testing.T) {
			root, dir := t.TempDir(), t.TempDir()
			p := filepath.Join(dir, "target")
			target := format + ":" + p
			holder := exec.Command("sleep", "60")
			if err := holder.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
			clitest.Must(t, 0, root, "acquire", "42", "--request-id", "first", "--pid", strconv.Itoa(holder.Process.Pid),
				"--file", target)
			if err := os.WriteFile(p, passwd, 0o644); err != nil {
				t.Fatal(err)
			}
			if r := clitest.Run(t, root, "heartbeat", "42", "--request-id", "first"); r.Code != 0 && r.Code != 5 {
				t.Fatalf("heartbeat: exit %d\n%s", r.Code, r.Stderr)
			}
			if got, _ := os.ReadFile(p); string(got) != string(passwd) {
				t.Fatalf("heartbeat overwrote the replaced target: %q", got)
			}
			// The holder dies: a take-over of its lock naming the same path
			// must not overwrite what is there now.
			_ = holder.Process.Kill()
			_ = holder.Wait()
			n := clitest.EventCount(t, root)
			r := clitest.Run(t, root, "acquire", "42", "--request-id", "second", "--force", "--pid", self, "--file", target)
			if r.Code != 2 || !strings.Contains(r.Stderr, p) {
				t.Fatalf("take-over naming the replaced target: exit %d, want 2\n%s", r.Code, r.Stderr)
			}
			if got, _ := os.ReadFile(p); string(got) != string(passwd) || clitest.EventCount(t, root) != n {
				t.Fatalf("refused take-over changed the file or the ledger")
			}
			clitest.Must(t, 0, root, "release", "42", "--request-id", "first", "--force", "--yes", "--reason", "cleanup")
			if got, err := os.ReadFile(p); err != nil || string(got) != string(passwd) {
				t.Fatalf("release removed or changed a file the ledger did not write: %q, %v", got, err)
			}
		})
	}
}

// tables lists an SQLite file's tables, read by a connection that is
// closed at once.
func tables(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	return strings.Join(names, ",")
}

// A root whose ledger.db was emptied, deleted or replaced is never given a
// new ledger (the chain and the fencing tokens would restart at 1), and a
// ledger.db that is another application's is never written to: every
// command exits 1 naming what it found, and no file in the root changes.
func TestALostOrForeignLedgerIsRefusedAndNothingIsCreated(t *testing.T) {
	t.Parallel()
	self := strconv.Itoa(os.Getpid())
	// golden: a ledger with a held lock, its WAL left by the CLI.
	golden := t.TempDir()
	clitest.Must(t, 0, golden, "acquire", "a", "--pid", self)
	clitest.Must(t, 0, golden, "acquire", "b", "--pid", self)
	other := t.TempDir()
	clitest.Must(t, 0, other, "acquire", "x", "--pid", self)
	copyRoot := func(t *testing.T) string {
		root := t.TempDir()
		if err := os.CopyFS(root, os.DirFS(golden)); err != nil {
			t.Fatal(err)
		}
		return root
	}
	rm := func(t *testing.T, paths ...string) {
		for _, p := range paths {
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
		}
	}
	write := func(t *testing.T, p string, data []byte) {
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name  string
		setup func(t *testing.T) string // returns the root
		want  []string                  // all on stderr
	}{
		{"ledger.db emptied, writer.flock names the ledger", func(t *testing.T) string {
			root := copyRoot(t)
			db := filepath.Join(root, "ledger.db")
			rm(t, db+"-wal", db+"-shm")
			write(t, db, nil)
			return root
		}, []string{"ledger.db is empty", "writer.flock records ledger", "fencing tokens would restart at 1"}},
		{"ledger.db and writer.flock deleted, locks/ has the ledger's files", func(t *testing.T) string {
			root := copyRoot(t)
			db := filepath.Join(root, "ledger.db")
			rm(t, db, db+"-wal", db+"-shm", filepath.Join(root, "writer.flock"))
			return root
		}, []string{"ledger.db is missing", filepath.Join("locks", "a.lock"), "layout the ledger writes"}},
		{"ledger.db emptied under its WAL", func(t *testing.T) string {
			root := copyRoot(t)
			db := filepath.Join(root, "ledger.db")
			rm(t, db+"-shm", filepath.Join(root, "writer.flock"), filepath.Join(root, "locks", "a.lock"), filepath.Join(root, "locks", "b.lock"))
			write(t, db, nil)
			return root
		}, []string{"ledger.db is empty", "ledger.db-wal holds"}},
		{"another ledger's database in its place", func(t *testing.T) string {
			root := copyRoot(t)
			db := filepath.Join(root, "ledger.db")
			rm(t, db, db+"-wal", db+"-shm")
			if err := os.CopyFS(filepath.Join(root, "x"), os.DirFS(other)); err != nil {
				t.Fatal(err)
			}
			for _, suffix := range []string{"", "-wal"} {
				if err := os.Rename(filepath.Join(root, "x", "ledger.db"+suffix), db+suffix); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.RemoveAll(filepath.Join(root, "x")); err != nil {
				t.Fatal(err)
			}
			return root
		}, []string{"writer.flock records ledger", "another ledger in its place"}},
		{"a text file as ledger.db", func(t *testing.T) string {
			root := t.TempDir()
			write(t, filepath.Join(root, "ledger.db"), []byte("my notes\n"))
			return root
		}, []string{"ledger.db", "not a database"}},
		{"an SQLite database of another application", func(t *testing.T) string {
			root := t.TempDir()
			appDB(t, filepath.Join(root, "ledger.db"))
			return root
		}, []string{"ledger.db", "another application", "users"}},
		{"an SQLite database of another application in a root that held a ledger", func(t *testing.T) string {
			root := copyRoot(t)
			db := filepath.Join(root, "ledger.db")
			rm(t, db, db+"-wal", db+"-shm")
			appDB(t, db)
			return root
		}, []string{"ledger.db", "another application", "users"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root := c.setup(t)
			db := filepath.Join(root, "ledger.db")
			before, tbl := treeListing(t, root), ""
			if strings.Contains(c.name, "SQLite") {
				tbl = tables(t, db)
			}
			cmds := [][]string{{"acquire", "c", "--pid", self}, {"run", "c", "--", "true"}, {"project"},
				{"status", "a"}, {"list"}, {"verify"}, {"timeline"}}
			replaced := strings.HasPrefix(c.name, "another ledger")
			var snap ledgerSnap
			if replaced {
				// A whole ledger in its place reads as itself; writing to it is
				// what would let fencing tokens go backwards. SQLite may fold
				// its WAL in when the refusing process closes it.
				cmds, snap = cmds[:3], snapLedger(t, root)
			}
			for _, args := range cmds {
				r := clitest.Run(t, root, args...)
				if r.Code != 1 {
					t.Errorf("%v: exit %d, want 1\nstderr: %s", args, r.Code, r.Stderr)
				}
				for _, w := range c.want {
					if !strings.Contains(r.Stderr, w) {
						t.Errorf("%v: stderr does not say %q:\n%s", args, w, r.Stderr)
					}
				}
			}
			if replaced {
				if after := snapLedger(t, root); after != snap {
					t.Errorf("the ledger in its place changed: %s -> %s", snap, after)
				}
			} else if after := treeListing(t, root); after != before {
				t.Errorf("the root changed:\n%s\nnow:\n%s", before, after)
			}
			if tbl != "" && tables(t, db) != tbl {
				t.Errorf("tables of the other application's database: %s, were %s", tables(t, db), tbl)
			}
		})
	}
	// Where nothing shows that a ledger lived, an empty ledger.db is a new one.
	t.Run("an empty ledger.db in a fresh root", func(t *testing.T) {
		root := t.TempDir()
		if err := os.WriteFile(filepath.Join(root, "ledger.db"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		clitest.Must(t, 0, root, "acquire", "c", "--pid", self)
		clitest.Must(t, 0, root, "verify")
	})
}

// A root given as a symlink, with or without a trailing slash, is the
// directory it names for every command, reading or writing.
func TestASymlinkedRootIsTheDirectoryItNames(t *testing.T) {
	t.Parallel()
	self := strconv.Itoa(os.Getpid())
	real := filepath.Join(t.TempDir(), "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	for _, root := range []string{link, link + "/"} {
		rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "a", "--pid", self).Stdout)
		clitest.Must(t, 0, root, "heartbeat", "a", "--request-id", rid)
		if p := statusJSON(t, root, "a")["path"]; p != filepath.Join(real, "locks", "a.lock") {
			t.Errorf("status through %s: path %v, want the lock file in %s", root, p, real)
		}
		clitest.Must(t, 0, root, "release", "a", "--request-id", rid)
		clitest.Must(t, 0, root, "run", "b", "--", "true")
		for _, args := range [][]string{{"list"}, {"verify"}, {"timeline"}, {"export"}, {"replay"}, {"who", "a", "--at", "1s"}, {"project"}} {
			clitest.Must(t, 0, root, args...)
		}
	}
	if got := clitest.EventCount(t, real); got != 16 {
		t.Fatalf("%d events in the real root, want 16 (twice: acquired, heartbeat, released, run's acquired and released, "+
			"and the recorded verify, export and project)", got)
	}
	if entries, _ := os.ReadDir(filepath.Dir(link)); len(entries) != 1 {
		t.Fatalf("something was created beside the link: %v", entries)
	}
}

// asReader runs the CLI as a user for whom a file with mode 0 is
// unreadable (uid 65534 when the tests run as root), on roots made under
// the directory it returns.
func asReader(t *testing.T) (func(root string, args ...string) clitest.Result, string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return unprivileged(t)
	}
	return func(root string, args ...string) clitest.Result { return clitest.Run(t, root, args...) }, t.TempDir()
}

// readerRoot is a root named name under base (asReader's), made by this
// user running the CLI with args, then given to the user asReader runs the
// CLI as.
func readerRoot(t *testing.T, base, name string, args ...string) string {
	t.Helper()
	root := filepath.Join(base, name)
	clitest.Must(t, 0, root, args...)
	if os.Geteuid() == 0 {
		chownTree(t, root, nobody)
	}
	return root
}

// One lock path that is not a readable regular file (a symlink, a
// directory, a file with no read permission), or a file where the locks
// directory should be, does not stop the read commands: timeline, export,
// who and replay do not read lock files at all; list lists the other locks
// and warns about that one; verify checks the others and reports that one
// as its problem (exit 1). Writes to the affected lock stay refused.
func TestOneUnreadableLockPathDoesNotStopTheReadCommands(t *testing.T) {
	t.Parallel()
	self := strconv.Itoa(os.Getpid())
	run, base := asReader(t)
	cases := []struct {
		name   string
		lock   string // the lock whose path is broken ("" for the directory)
		breakf func(t *testing.T, root string)
		want   string // named by verify, list and the refused write
	}{
		{"a file at ROOT/locks", "", func(t *testing.T, root string) {
			locks := filepath.Join(root, "locks")
			if err := os.RemoveAll(locks); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(locks, []byte("not a directory\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "not a directory"},
		{"a symlinked lock file", "c", func(t *testing.T, root string) {
			if err := os.Symlink("/etc/hostname", filepath.Join(root, "locks", "c.lock")); err != nil {
				t.Fatal(err)
			}
		}, "symlink"},
		{"a directory as a lock file", "c", func(t *testing.T, root string) {
			if err := os.Mkdir(filepath.Join(root, "locks", "c.lock"), 0o700); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file"},
		{"a held lock's file without read permission", "c", func(t *testing.T, root string) {
			if err := os.Chmod(filepath.Join(root, "locks", "c.lock"), 0); err != nil {
				t.Fatal(err)
			}
		}, "permission denied"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := filepath.Join(base, "r"+strconv.Itoa(i))
			for _, lock := range []string{"a", "b"} {
				clitest.Must(t, 0, root, "acquire", lock, "--pid", self)
			}
			if strings.Contains(c.name, "held") {
				clitest.Must(t, 0, root, "acquire", "c", "--pid", self)
			}
			if os.Geteuid() == 0 {
				chownTree(t, root, nobody)
			}
			c.breakf(t, root)
			// (export and verify record themselves: the lock events are what must not change.)
			events := lockEventCount(t, root)
			for _, args := range [][]string{{"timeline"}, {"export"}, {"who", "a", "--at", "1s"}, {"replay"}, {"history", "a"}} {
				if r := run(root, args...); r.Code != 0 || !strings.Contains(r.Stdout, "a") {
					t.Errorf("%v: exit %d\nstdout: %s\nstderr: %s", args, r.Code, r.Stdout, r.Stderr)
				}
			}
			r := run(root, "list", "--json")
			var listed []map[string]any
			if err := json.Unmarshal([]byte(r.Stdout), &listed); r.Code != 0 || err != nil {
				t.Fatalf("list: exit %d, %v\n%s%s", r.Code, err, r.Stdout, r.Stderr)
			}
			names := map[string]bool{}
			for _, l := range listed {
				names[l["lock_name"].(string)] = true
			}
			if !names["a"] || !names["b"] || !strings.Contains(r.Stderr, c.want) {
				t.Errorf("list shows %v, want a and b, and a warning naming %q\nstderr: %s", names, c.want, r.Stderr)
			}
			if c.lock != "" && !names[c.lock] {
				t.Errorf("list does not show the unreadable lock %s: %v", c.lock, names)
			}
			r = run(root, "verify", "--json")
			if r.Code != 1 {
				t.Fatalf("verify: exit %d, want 1\n%s%s", r.Code, r.Stdout, r.Stderr)
			}
			rep := clitest.DecodeVerify(t, r)
			if rep.OK {
				t.Fatalf("verify: ok\n%s", r.Stdout)
			}
			for _, p := range rep.Problems {
				if p.Kind != "lock_file_unreadable" || !strings.Contains(p.Detail, c.want) || c.lock != "" && p.Lock != c.lock {
					t.Errorf("verify problem %+v: want only lock_file_unreadable naming %q for lock %q", p, c.want, c.lock)
				}
			}
			if len(rep.Problems) == 0 {
				t.Errorf("verify reported no problem")
			}
			lock := c.lock
			if lock == "" {
				lock = "d"
			}
			if r := run(root, "acquire", lock, "--force", "--pid", "1"); r.Code != 1 || !strings.Contains(r.Stderr, c.want) {
				t.Errorf("acquire %s: exit %d, want 1 naming %q\n%s", lock, r.Code, c.want, r.Stderr)
			}
			if lockEventCount(t, root) != events {
				t.Errorf("the ledger changed")
			}
		})
	}
}

// inMountNamespace returns a runner of lockledger in a mount namespace of
// its own where ROOT is also mounted at bind and ROOT/locks at locksBind
// (bind mounts: the same directories under other names, which no symlink
// resolution can tell). It skips the test, loudly, where mounting is not
// permitted.
func inMountNamespace(t *testing.T, root, bind, locksBind string) func(args ...string) clitest.Result {
	t.Helper()
	const script = `mount --bind "$1" "$2" && mount --bind "$1/locks" "$3" || exit 99; shift 3; exec "$@"`
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skipf("SKIPPED: cannot bind-mount in a mount namespace of its own here: %v", err)
	}
	run := func(args ...string) clitest.Result {
		t.Helper()
		c := exec.Command("unshare", append([]string{"-m", "--propagation", "private", "sh", "-c", script, "sh", root, bind, locksBind, clitest.Bin()}, args...)...)
		c.Env = clitest.Env(root)
		return clitest.Exec(t, c)
	}
	if r := run("--help"); r.Code != 0 {
		t.Skipf("SKIPPED: cannot bind-mount in a mount namespace of its own here (unshare -m, mount --bind): exit %d %s", r.Code, r.Stderr)
	}
	return run
}

// A --file path that reaches ROOT or ROOT/locks through a bind mount (a
// second name of the same directory, with no symlink to resolve) is
// refused like the path itself: exit 2 naming the path, no lock file of
// the ledger overwritten, nothing created among the ledger's own files,
// the ledger unchanged.
func TestATargetReachingTheRootThroughABindMountIsRefused(t *testing.T) {
	t.Parallel()
	root, dir := t.TempDir(), t.TempDir()
	self := strconv.Itoa(os.Getpid())
	clitest.Must(t, 0, root, "acquire", "a", "--pid", self)
	bind, locksBind := filepath.Join(dir, "bind"), filepath.Join(dir, "locks-bind")
	for _, d := range []string{bind, locksBind} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	run := inMountNamespace(t, root, bind, locksBind)
	lockA := filepath.Join(root, "locks", "a.lock")
	sumA, before := fileSum(t, lockA), snapLedger(t, root)
	for _, target := range []string{
		"tower-fleet:" + filepath.Join(bind, "locks", "a.lock"),
		"bso:" + filepath.Join(bind, "locks", "new.bso"),
		"bso:" + filepath.Join(bind, ".sprint-running"),
		"tower-fleet:" + filepath.Join(locksBind, "a.lock"),
		"gitclaw:" + filepath.Join(locksBind, "new.lock"),
	} {
		r := run("acquire", "b", "--pid", self, "--file", target)
		path := target[strings.IndexByte(target, ':')+1:]
		if r.Code != 2 || !strings.Contains(r.Stderr, path) || !strings.Contains(r.Stderr, "--file") {
			t.Errorf("--file %s: exit %d, want 2 naming --file and the path\nstderr: %s", target, r.Code, r.Stderr)
		}
	}
	if got := fileSum(t, lockA); got != sumA {
		t.Fatal("a target through the bind mount overwrote lock a's file")
	}
	for _, p := range []string{filepath.Join(root, "locks", "new.bso"), filepath.Join(root, ".sprint-running"), filepath.Join(root, "locks", "new.lock")} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a target through the bind mount created %s (%v)", p, err)
		}
	}
	if after := snapLedger(t, root); after != before {
		t.Fatalf("refused acquisitions changed the ledger: %s -> %s", before, after)
	}
	// A subdirectory of the locks directory may hold targets, under any name.
	if err := os.Mkdir(filepath.Join(root, "locks", "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if r := run("acquire", "b", "--pid", self, "--file", "bso:"+filepath.Join(locksBind, "sub", "b.bso")); r.Code != 0 {
		t.Fatalf("a target in a subdirectory of the locks directory, through the bind mount: exit %d\n%s", r.Code, r.Stderr)
	}
}

// A --file path that is not a regular file (a device, a FIFO, a
// directory, a symlink to a file) is bad input: exit 2 naming --file, the
// path and the rule, nothing recorded, nothing at the path changed, and a
// FIFO is never opened in a way that blocks.
func TestATargetThatIsNotARegularFileIsInvalidInput(t *testing.T) {
	t.Parallel()
	root, dir := t.TempDir(), t.TempDir()
	self := strconv.Itoa(os.Getpid())
	clitest.Must(t, 0, root, "acquire", "seed", "--pid", self)
	fifo, sub, file, link := filepath.Join(dir, "fifo"), filepath.Join(dir, "dir"), filepath.Join(dir, "file"), filepath.Join(dir, "link")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("pid: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	sum, before := fileSum(t, file), snapLedger(t, root)
	for _, p := range []string{"/dev/null", fifo, sub, link} {
		for _, format := range []string{"bso", "tower-fleet"} {
			target := format + ":" + p
			r := clitest.Run(t, root, "acquire", "42", "--pid", self, "--file", target)
			if r.Code != 2 || !strings.Contains(r.Stderr, "--file") || !strings.Contains(r.Stderr, target) ||
				!strings.Contains(r.Stderr, "lockledger writes a --file path only") {
				t.Errorf("--file %s: exit %d, want 2 naming --file %s and the rule\nstderr: %s", target, r.Code, target, r.Stderr)
			}
		}
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO changed: %v %v", fi, err)
	}
	if entries, err := os.ReadDir(sub); err != nil || len(entries) != 0 {
		t.Errorf("the directory changed: %v %v", entries, err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 || fileSum(t, file) != sum {
		t.Errorf("the symlink or the file it names changed: %v %v", fi, err)
	}
	if after := snapLedger(t, root); after != before {
		t.Fatalf("refused acquisitions changed the ledger: %s -> %s", before, after)
	}
}
