package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/internal/clitest"
)

// A job whose lock was taken over writes with its old token: fence write
// refuses it (exit 5, the file as the new holder left it) and records
// fence_rejected with both tokens, the file, the lock and the old
// holder's request; the log still verifies. The new holder's job, run by
// run, writes with the token run gave it.
func TestFenceWriteRefusesTheOldHoldersWriteAndRecordsIt(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	target := filepath.Join(t.TempDir(), "release.txt")
	old := clitest.Must(t, 0, root, "acquire", "deploy", "--holder", "none", "--json")
	var oldAcq struct {
		RequestID    string `json:"request_id"`
		FencingToken int64  `json:"fencing_token"`
	}
	if err := json.Unmarshal([]byte(old.Stdout), &oldAcq); err != nil {
		t.Fatal(err)
	}
	clitest.Must(t, 0, root, "steal", "deploy", "--active", "--yes", "--reason", "the old job stopped answering")
	clitest.Must(t, 0, root, "release", "deploy", "--force", "--yes", "--reason", "make way for run")
	run := clitest.Run(t, root, "run", "deploy", "--", "sh", "-c",
		`echo "from token $LOCKLEDGER_FENCING_TOKEN" | "$0" fence write "$1"`, clitest.Bin(), target)
	if run.Code != 0 {
		t.Fatalf("run: exit %d\n%s", run.Code, run.Stderr)
	}
	newer := readFile(t, target)
	if !strings.HasPrefix(newer, "from token ") {
		t.Fatalf("run's job wrote %q", newer)
	}

	stale := clitest.RunWith(t, root, []string{"LOCKLEDGER_FENCING_TOKEN=" + fmt.Sprint(oldAcq.FencingToken),
		"LOCKLEDGER_LOCK=deploy", "LOCKLEDGER_REQUEST_ID=" + oldAcq.RequestID}, "the old job's output\n", "fence", "write", target)
	if stale.Code != 5 || !strings.Contains(stale.Stderr, "is stale") {
		t.Fatalf("the old holder's write: exit %d, want 5\n%s", stale.Code, stale.Stderr)
	}
	if got := readFile(t, target); got != newer {
		t.Fatalf("the file now holds %q, want %q", got, newer)
	}
	rows := clitest.Strings(t, root, `SELECT body FROM events WHERE type = 'fence_rejected'`)
	if len(rows) != 1 {
		t.Fatalf("%d fence_rejected events, want 1", len(rows))
	}
	var ev map[string]any
	if err := json.Unmarshal([]byte(rows[0]), &ev); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"lock_name": "deploy", "request_id": oldAcq.RequestID, "stale_token": float64(oldAcq.FencingToken),
		"fence": "file_write", "resource": target, "host_id": "vm"}
	for k, v := range want {
		if ev[k] != v {
			t.Errorf("fence_rejected %s = %v, want %v\n%s", k, ev[k], v, rows[0])
		}
	}
	if cur, _ := ev["current_token"].(float64); cur <= float64(oldAcq.FencingToken) {
		t.Errorf("fence_rejected current_token %v, want run's token", ev["current_token"])
	}
	if h := clitest.Must(t, 0, root, "history", "deploy").Stdout; !strings.Contains(h, "fence_rejected") ||
		!strings.Contains(h, "REFUSED write to file "+target) {
		t.Errorf("history does not show the refusal:\n%s", h)
	}
	clitest.Verify(t, 0, root)
}

// A refusal the ledger cannot take (no ledger at the root) still refuses
// the write, and stderr says it was not recorded.
func TestFenceWriteRefusesEvenWhenTheLedgerCannotRecord(t *testing.T) {
	t.Parallel()
	target := filepath.Join(t.TempDir(), "f")
	writer := t.TempDir()
	clitest.Must(t, 0, writer, "acquire", "x", "--holder", "none")
	clitest.Must(t, 0, writer, "steal", "x", "--active", "--yes", "--reason", "r")
	if r := clitest.RunIn(t, writer, "two", "fence", "write", "--token", "2", "--lock", "x", target); r.Code != 0 {
		t.Fatalf("token 2: exit %d\n%s", r.Code, r.Stderr)
	}
	empty := t.TempDir()
	r := clitest.RunIn(t, empty, "one", "fence", "write", "--token", "1", "--lock", "x", target)
	if r.Code != 5 || !strings.Contains(r.Stderr, "NOT recorded") {
		t.Fatalf("exit %d, want 5 and a warning\n%s", r.Code, r.Stderr)
	}
	if got := readFile(t, target); got != "two" {
		t.Fatalf("the file holds %q", got)
	}
	// --json: the error object names the refusal as the event would.
	o := jsonOut(t, clitest.RunIn(t, empty, "one", "fence", "write", "--json", "--token", "1", "--lock", "x", target))
	if o["error"] != "fence_rejected" || o["fence"] != "file_write" || o["resource"] != target ||
		o["stale_token"] != 1.0 || o["current_token"] != 2.0 {
		t.Fatalf("error object %v", o)
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Fatalf("a ledger was made at the empty root: %v", ents)
	}
}

// Bad input is exit 2, naming the flag, and writes nothing.
func TestFenceWriteRefusesBadInput(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	target := filepath.Join(t.TempDir(), "f")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--lock", "x"}, "--token"},
		{[]string{"--token", "seven", "--lock", "x"}, "--token"},
		{[]string{"--token", "0", "--lock", "x"}, "--token"},
		{[]string{"--token", "3"}, "--lock"},
		{[]string{"--token", "3", "--lock", "X"}, "lock name"},
	} {
		r := clitest.RunIn(t, root, "data", append([]string{"fence", "write", target}, c.args...)...)
		if r.Code != 2 || !strings.Contains(r.Stderr, c.want) {
			t.Errorf("%v: exit %d, want 2 naming %s\n%s", c.args, r.Code, c.want, r.Stderr)
		}
	}
	if _, err := os.Lstat(target); err == nil {
		t.Fatal("the file was written")
	}
}

// Writers racing as separate processes, each with its own token: the file
// ends with the highest token's content and keeps that token; every other
// writer either landed before it or was refused with exit 5.
func TestFenceWriteConcurrentProcessesNeverRegress(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	target := filepath.Join(t.TempDir(), "shared")
	const writers = 8
	var wg sync.WaitGroup
	codes := make([]int, writers+1)
	for tok := 1; tok <= writers; tok++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clitest.Command(t.Context(), root, "fence", "write", "--token", fmt.Sprint(tok), "--lock", "shared", target)
			c.Stdin = strings.NewReader(fmt.Sprintf("token %d\n", tok))
			r, err := clitest.Output(c)
			if err != nil {
				codes[tok] = -1
				return
			}
			codes[tok] = r.Code
		}()
	}
	wg.Wait()
	for tok := 1; tok <= writers; tok++ {
		if codes[tok] != 0 && codes[tok] != 5 || tok == writers && codes[tok] != 0 {
			t.Fatalf("token %d: exit %d", tok, codes[tok])
		}
	}
	if got := readFile(t, target); got != fmt.Sprintf("token %d\n", writers) {
		t.Fatalf("the file ends with %q, want the highest token's", got)
	}
	if side := strings.TrimLeft(strings.TrimSpace(readFile(t, target+".fence")), "0"); side != fmt.Sprint(writers) {
		t.Fatalf("the kept token is %q, want %d", side, writers)
	}
}

// A refused writer killed right after the refusal, with its whole process
// group (as run stops a job whose lock it lost: TERM, then KILL after
// --kill-grace), still has its refusal recorded: the recorder is not of
// its group. The test holds the root's writer mutex, so that the record
// waits; once some process other than the test has ROOT/writer.flock open
// (the refusal is being recorded), it KILLs fence write's group, lets the
// mutex go and awaits fence_rejected in history --json.
func TestFenceWriteRefusalIsRecordedWhenTheWriterIsKilledRightAfter(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	target := filepath.Join(t.TempDir(), "f")
	clitest.Must(t, 0, root, "acquire", "x", "--holder", "none")
	clitest.Must(t, 0, root, "steal", "x", "--active", "--yes", "--reason", "r")
	if r := clitest.RunIn(t, root, "two", "fence", "write", "--token", "2", "--lock", "x", target); r.Code != 0 {
		t.Fatalf("token 2: exit %d\n%s", r.Code, r.Stderr)
	}

	mutex := filepath.Join(root, "writer.flock")
	m, err := os.OpenFile(mutex, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := unix.Flock(int(m.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w := clitest.Command(ctx, root, "fence", "write", "--token", "1", "--lock", "x", "--request-id", "req_killedwriter", target)
	w.Stdin = strings.NewReader("one")
	w.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !opened(mutex, os.Getpid()) {
		if time.Now().After(deadline) {
			t.Fatal("no process opened the writer mutex: the refusal was never being recorded")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := syscall.Kill(-w.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = w.Wait()
	if err := unix.Flock(int(m.Fd()), unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}

	deadline = time.Now().Add(30 * time.Second)
	for {
		var evs []rejectedEvent
		h := clitest.Must(t, 0, root, "history", "x", "--json")
		if err := json.Unmarshal([]byte(h.Stdout), &evs); err != nil {
			t.Fatal(err)
		}
		if i := slices.IndexFunc(evs, func(e rejectedEvent) bool { return e.Type == "fence_rejected" }); i >= 0 {
			if evs[i].RequestID != "req_killedwriter" || evs[i].StaleToken != 1 {
				t.Fatalf("fence_rejected of %s, stale token %d; want req_killedwriter, 1", evs[i].RequestID, evs[i].StaleToken)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the refusal of the killed writer is not in the ledger after 30 s:\n%s", h.Stdout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	clitest.Verify(t, 0, root)
}

// rejectedEvent is what the test reads of history --json.
type rejectedEvent struct {
	Type       string `json:"type"`
	RequestID  string `json:"request_id"`
	StaleToken int64  `json:"stale_token"`
}

// opened says whether a process other than not has path open.
func opened(path string, not int) bool {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == not {
			continue
		}
		fds, _ := os.ReadDir(filepath.Join("/proc", d.Name(), "fd"))
		for _, fd := range fds {
			if l, err := os.Readlink(filepath.Join("/proc", d.Name(), "fd", fd.Name())); err == nil && l == path {
				return true
			}
		}
	}
	return false
}
