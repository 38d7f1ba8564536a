package e2e

// A verify that fails: what it leaves behind (a record of the failure,
// nothing signed over the log it found damaged) and what it waits for.

import (
	"bufio"
	"context"
	"fmt"
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

// TestFailedVerifySignsNothingOverTheDamage: on a root the user pinned,
// an event's body is edited in place (its chain hash and Merkle leaf left
// as they were). Plain verify fails, and records that it failed; but the
// record is covered by no new checkpoint row and the head kept outside the
// root is left byte for byte as it was: a verify never vouches for a log
// it found damaged. A second verify fails the same way.
func TestFailedVerifySignsNothingOverTheDamage(t *testing.T) {
	t.Parallel()
	root, head := defaultRoot(t)
	a := attack(t, root)
	a.exec(t, `UPDATE events SET body = CAST(replace(CAST(body AS TEXT), '"bob"', '"mallory"') AS BLOB) WHERE seq = 3`)
	a.restore(t)
	kept := readFile(t, head)
	var lastRow int64
	if err := clitest.DB(t, root).QueryRow(`SELECT coalesce(max(id), 0) FROM checkpoints`).Scan(&lastRow); err != nil {
		t.Fatal(err)
	}

	for i := range 2 {
		v := clitest.Verify(t, 1, root, "--full")
		modified := false
		for _, p := range v.Problems {
			modified = modified || p.Kind == "modified" && p.Seq == 3
		}
		if !modified || v.FirstBad == nil || v.FirstBad.Seq > 3 {
			t.Fatalf("verify %d of a log whose seq 3 was edited: first bad %+v, want seq 3 modified\n%+v", i+1, v.FirstBad, v.Problems)
		}
		if v.Recorded == 0 {
			t.Fatalf("verify %d failed without recording that it did", i+1)
		}
		var result string
		if err := clitest.DB(t, root).QueryRow(`SELECT json_extract(body, '$.result') FROM events WHERE seq = ? AND type = 'ledger_verified'`,
			v.Recorded).Scan(&result); err != nil || result != "failed" {
			t.Fatalf("verify %d's record at seq %d: result %q (%v), want failed", i+1, v.Recorded, result, err)
		}
		if got := readFile(t, head); got != kept {
			t.Fatalf("verify %d failed and replaced the head kept in %s:\nwas %s\nnow %s", i+1, head, kept, got)
		}
		var rows int
		if err := clitest.DB(t, root).QueryRow(`SELECT count(*) FROM checkpoints WHERE id > ?`, lastRow).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		if rows != 0 {
			t.Fatalf("verify %d failed and stored %d checkpoint rows signing the log it found damaged", i+1, rows)
		}
	}
}

// stoppedFlock starts flock(1) holding the exclusive lock of path (with a
// child that waits on its standard input) and stops both (SIGSTOP) once it
// holds it, as a process stopped while it kept a head; the test's cleanup
// resumes and kills them.
func stoppedFlock(t *testing.T, path string) {
	t.Helper()
	clitest.NeedBinary(t, "flock")
	c := exec.Command("flock", "--exclusive", path, "sh", "-c", "echo locked; exec cat")
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := c.Process.Pid
	t.Cleanup(func() {
		_ = syscall.Kill(-pgid, syscall.SIGCONT)
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		stdin.Close()
		_ = c.Wait()
	})
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "locked\n" {
		t.Fatalf("flock did not take the lock of %s: %q, %v", path, line, err)
	}
	if err := syscall.Kill(-pgid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stat := fmt.Sprintf("/proc/%d/stat", pgid)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(stat)
		if err != nil {
			t.Fatal(err)
		}
		if f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])); len(f) > 0 && f[0] == "T" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("flock never stopped: %s", b)
		}
	}
}

// TestVerifyGivesUpOnAHeadLockAStoppedProcessHolds: a process stopped
// (SIGSTOP) while it holds the lock of the head the trust store keeps
// holds up a plain verify for the bounded wait only: verify then fails
// (exit 1), naming the lock file and that another process holds it, and
// records nothing.
func TestVerifyGivesUpOnAHeadLockAStoppedProcessHolds(t *testing.T) {
	t.Parallel()
	root, head := defaultRoot(t)
	lock := strings.TrimSuffix(head, ".checkpoint") + ".lock"
	events := clitest.EventCount(t, root)
	stoppedFlock(t, lock)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := clitest.Exec(t, clitest.Command(ctx, root, "verify"))
	if ctx.Err() != nil {
		t.Fatalf("verify waited past a minute on the lock %s a stopped process holds", lock)
	}
	if r.Code != 1 || !strings.Contains(r.Stderr, lock) || !strings.Contains(r.Stderr, "another process has held this lock") {
		t.Fatalf("verify under a stopped process's head lock: exit %d, want 1 naming %s\nstdout: %s\nstderr: %s", r.Code, lock, r.Stdout, r.Stderr)
	}
	if n := clitest.EventCount(t, root); n != events {
		t.Fatalf("a verify that could not read the head appended %d events", n-events)
	}
}

// TestVerifyFileRefusesAFIFOAndReadsAPipeItWasGiven: verify --file of a
// named FIFO no process writes is bad input at once (exit 2, naming
// --file and the rule), not an open that waits for ever; an export given
// through a pipe, by process substitution (/dev/fd/N) or as /dev/stdin,
// verifies as the file does.
func TestVerifyFileRefusesAFIFOAndReadsAPipeItWasGiven(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	pid := strconv.Itoa(os.Getpid())
	clitest.Must(t, 0, root, "acquire", "app", "--actor", "alice", "--request-id", "a1", "--pid", pid)
	clitest.Must(t, 0, root, "release", "app", "--request-id", "a1")
	export := filepath.Join(dir, "audit.jsonl")
	clitest.Must(t, 0, root, "export", "-o", export)
	if v := clitest.Verify(t, 0, root, "--file", export); v.Events != 2 {
		t.Fatalf("verify --file of the export: %d events, want 2", v.Events)
	}

	fifo := filepath.Join(dir, "audit.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := clitest.Exec(t, clitest.Command(ctx, root, "verify", "--file", fifo))
	if ctx.Err() != nil {
		t.Fatalf("verify --file waited past a minute on a FIFO no process writes")
	}
	if r.Code != 2 || !strings.Contains(r.Stderr, "--file") || !strings.Contains(r.Stderr, fifo) || !strings.Contains(r.Stderr, "must be a regular file") {
		t.Fatalf("verify --file FIFO: exit %d, want 2 naming --file, %s and the rule\nstdout: %s\nstderr: %s", r.Code, fifo, r.Stdout, r.Stderr)
	}

	clitest.NeedBinary(t, "bash")
	c := exec.CommandContext(ctx, "bash", "-c", `exec "$0" verify --json --file <(cat "$1")`, clitest.Bin(), export)
	c.Env = clitest.Env(root)
	r = clitest.Exec(t, c)
	if r.Code != 0 {
		t.Fatalf("verify --file <(cat export): exit %d\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
	}
	if v := clitest.DecodeVerify(t, r); !v.OK || v.Events != 2 || !strings.HasPrefix(v.Source, "/dev/fd/") {
		t.Fatalf("verify --file <(cat export): ok %v, %d events from %q; want 2 from /dev/fd/N", v.OK, v.Events, v.Source)
	}
	if v := clitest.DecodeVerify(t, clitest.RunIn(t, root, readFile(t, export), "verify", "--json", "--file", "/dev/stdin")); !v.OK || v.Events != 2 {
		t.Fatalf("verify --file /dev/stdin: ok %v, %d events; want 2", v.OK, v.Events)
	}
}
