package e2e

import (
	"crypto/rand"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
			clitest.Must(t, 0, root, "release", "42", "--request-id", "first", "--force")
			if got, err := os.ReadFile(p); err != nil || string(got) != string(passwd) {
				t.Fatalf("release removed or changed a file the ledger did not write: %q, %v", got, err)
			}
		})
	}
}
