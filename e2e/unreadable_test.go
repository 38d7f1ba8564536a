package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/clitest"
)

// garbage is a file at a lock path that no reader can parse.
var garbage = []byte("{\"lock_version\": \x00 this is not a lock")

// keptAside returns the single NAME.lock.corrupt-TIME file beside path.
func keptAside(t *testing.T, path string) string {
	t.Helper()
	found, err := filepath.Glob(path + ".corrupt-*")
	if err != nil || len(found) != 1 {
		t.Fatalf("files kept aside for %s: %v (%v)", path, found, err)
	}
	name := filepath.Base(found[0])
	if !regexp.MustCompile(`^` + regexp.QuoteMeta(filepath.Base(path)) + `\.corrupt-\d{8}T\d{6}Z$`).MatchString(name) {
		t.Fatalf("kept aside as %s, want NAME.lock.corrupt-YYYYMMDDTHHMMSSZ", name)
	}
	return found[0]
}

// TestProjectKeepsAnUnreadableLockFileAsideAndRestoresTheHolders: garbage
// written over the lock file of a held lock makes verify fail; project
// keeps the garbage aside as NAME.lock.corrupt-TIME (0600, its bytes
// intact), puts the ledger's file back, and records both; verify is then
// OK and a second project has nothing to do.
func TestProjectKeepsAnUnreadableLockFileAsideAndRestoresTheHolders(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	clitest.Must(t, 0, root, "acquire", "deploy", "--pid", self)
	path := filepath.Join(root, "locks", "deploy.lock")
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, garbage, 0o644); err != nil {
		t.Fatal(err)
	}
	clitest.Must(t, 1, root, "verify")
	desc := fmt.Sprintf("unreadable lock file at %s (%d bytes, modified ", path, len(garbage))
	if r := clitest.Must(t, 0, root, "status", "deploy"); !strings.Contains(r.Stdout, desc) || !strings.Contains(r.Stdout, "lockledger project") {
		t.Fatalf("status of a held lock with garbage at its path does not say so:\n%s", r.Stdout)
	}

	r := clitest.Must(t, 0, root, "project")
	if strings.Contains(r.Stdout, "no change") || !strings.Contains(r.Stdout, "moved aside") {
		t.Fatalf("project:\n%s", r.Stdout)
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("lock file after project: %q (%v), want the ledger's %q", got, err, want)
	}
	aside := keptAside(t, path)
	if got, err := os.ReadFile(aside); err != nil || !bytes.Equal(got, garbage) {
		t.Fatalf("kept aside: %q (%v), want the garbage", got, err)
	}
	if fi, err := os.Stat(aside); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("kept aside with mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	ev := lastBody(t, root, "lock_projected")
	changes := fmt.Sprint(ev["changes"])
	if ev["lock_name"] != "deploy" || ev["moved_aside"] != aside || !strings.Contains(changes, desc) ||
		!strings.Contains(changes, "lock file rewritten") {
		t.Fatalf("lock_projected: %v", ev)
	}
	clitest.Must(t, 0, root, "verify")
	n := clitest.EventCount(t, root)
	// It records its run (ledger_projected), and nothing else.
	if r := clitest.Must(t, 0, root, "project"); !strings.Contains(r.Stdout, "no change") || clitest.EventCount(t, root) != n+1 {
		t.Fatalf("second project:\n%s", r.Stdout)
	}
	if got, err := os.ReadFile(keptAside(t, path)); err != nil || !bytes.Equal(got, garbage) {
		t.Fatalf("kept file after a second project: %q (%v)", got, err)
	}
}

// TestAnUnreadableLockFileIsShownAsWhatItIs: garbage at the path of a held
// lock survives its release (release never removes a file that is not the
// ledger's) and then blocks the lock, to fail safe. release says so and
// points at project; status, list, a blocked acquire and their JSON
// describe the file (path, size, modification time), never a made-up
// holder (pid 0 on host unknown since 1970). project keeps it aside and the
// lock can be taken again.
func TestAnUnreadableLockFileIsShownAsWhatItIs(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "deploy", "--pid", self).Stdout)
	path := filepath.Join(root, "locks", "deploy.lock")
	if err := os.WriteFile(path, garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	r := clitest.Must(t, 0, root, "release", "deploy", "--request-id", rid, "--json")
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, garbage) {
		t.Fatalf("release touched the unreadable file: %q (%v)", got, err)
	}
	if !strings.Contains(r.Stderr, "lockledger project") {
		t.Fatalf("release does not point at project:\n%s", r.Stderr)
	}
	var rel struct {
		State   string         `json:"state"`
		Corrupt map[string]any `json:"corrupt"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &rel); err != nil || rel.State != "held" || rel.Corrupt["path"] != path {
		t.Fatalf("release --json: %+v (%v)\n%s", rel, err, r.Stdout)
	}

	desc := fmt.Sprintf("unreadable lock file at %s (%d bytes, modified ", path, len(garbage))
	madeUp := regexp.MustCompile(`pid 0|0@unknown|1970|unknown`)
	for _, args := range [][]string{{"status", "deploy"}, {"list"}} {
		out := clitest.Must(t, 0, root, args...).Stdout
		if !strings.Contains(out, desc) || madeUp.MatchString(out) {
			t.Fatalf("%s:\n%s", strings.Join(args, " "), out)
		}
	}
	st := statusJSON(t, root, "deploy")
	corrupt, _ := st["corrupt"].(map[string]any)
	if st["state"] != "held" || st["lock"] != nil || st["request_id"] != nil || corrupt["path"] != path ||
		corrupt["size_bytes"] != float64(len(garbage)) || corrupt["modified"] == nil {
		t.Fatalf("status --json: %v", st)
	}
	r = clitest.Must(t, 3, root, "acquire", "deploy", "--pid", self)
	if !strings.Contains(r.Stderr, desc) || !strings.Contains(r.Stderr, "lockledger project") || madeUp.MatchString(r.Stderr) {
		t.Fatalf("blocked acquire:\n%s", r.Stderr)
	}
	r = clitest.Must(t, 3, root, "acquire", "deploy", "--pid", self, "--json")
	var blocked map[string]any
	if err := json.Unmarshal([]byte(r.Stdout), &blocked); err != nil {
		t.Fatalf("acquire --json: %v\n%s", err, r.Stdout)
	}
	corrupt, _ = blocked["corrupt"].(map[string]any)
	if held, ok := blocked["held_by"]; !ok || held != nil || corrupt["path"] != path {
		t.Fatalf("acquire --json: %v", blocked)
	}

	clitest.Must(t, 0, root, "project")
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("project left the unreadable file at the path of a free lock: %v", err)
	}
	if got, err := os.ReadFile(keptAside(t, path)); err != nil || !bytes.Equal(got, garbage) {
		t.Fatalf("kept aside: %q (%v)", got, err)
	}
	clitest.Must(t, 0, root, "acquire", "deploy", "--pid", self)
	clitest.Must(t, 0, root, "verify")
}

// TestTheTimelineSaysOnceWhereProjectKeptAnUnreadableFile: the
// lock_projected line names the file kept aside once, not twice.
func TestTheTimelineSaysOnceWhereProjectKeptAnUnreadableFile(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	clitest.Must(t, 0, root, "acquire", "deploy", "--pid", strconv.Itoa(os.Getpid()))
	path := filepath.Join(root, "locks", "deploy.lock")
	if err := os.WriteFile(path, garbage, 0o644); err != nil {
		t.Fatal(err)
	}
	clitest.Must(t, 0, root, "project")
	aside := keptAside(t, path)
	r := clitest.Must(t, 0, root, "timeline", "--lock", "deploy", "--wide")
	if n := strings.Count(r.Stdout, "moved aside to "+aside); n != 1 {
		t.Fatalf("the timeline says %d times where the file was kept aside, want once:\n%s", n, r.Stdout)
	}
}

// TestAnUnreadableLockFileIsRecordedAsWhatItIs: the events a lock blocked
// by an unreadable file records (acquire_blocked, with and without
// --wait; action_refused of a release and a steal) name the file (path,
// size, modification time) and carry no holder: never a made-up one
// (request unknown, pid 0 on host unknown, since 1970). history and the
// timeline say the same.
func TestAnUnreadableLockFileIsRecordedAsWhatItIs(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	clitest.Must(t, 0, root, "acquire", "other", "--pid", self)
	path := filepath.Join(root, "locks", "deploy.lock")
	if err := os.WriteFile(path, garbage, 0o644); err != nil {
		t.Fatal(err)
	}
	modified := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	if err := os.Chtimes(path, modified, modified); err != nil {
		t.Fatal(err)
	}
	clitest.Must(t, 3, root, "acquire", "deploy", "--pid", self)
	// Long enough that its first attempt, on a loaded machine, is made
	// and queued before the wait runs out.
	clitest.Must(t, 3, root, "acquire", "deploy", "--pid", self, "--wait", "1s")
	clitest.Must(t, 5, root, "release", "deploy", "--request-id", "req_nobody")
	clitest.Must(t, 3, root, "steal", "deploy", "--pid", self, "--reason", "test")

	want := map[string]any{"path": path, "size_bytes": float64(len(garbage)), "modified": modified.Format(time.RFC3339)}
	// The waiter's place in the lock's queue (an acquire_blocked carrying
	// until) is a third acquire_blocked; it must name the file as well.
	for typ, n := range map[string]int{"acquire_blocked": 3, "action_refused": 2} {
		bodies := clitest.Strings(t, root, `SELECT body FROM events WHERE type = '`+typ+`' AND lock_name = 'deploy' ORDER BY seq`)
		if len(bodies) != n {
			t.Fatalf("%d %s events, want %d", len(bodies), typ, n)
		}
		for _, b := range bodies {
			var ev map[string]any
			if err := json.Unmarshal([]byte(b), &ev); err != nil {
				t.Fatal(err)
			}
			if held, ok := ev["held_by"]; ok {
				t.Errorf("%s records a holder %v for an unreadable file:\n%s", typ, held, b)
			}
			if got, _ := ev["unreadable_file"].(map[string]any); !reflect.DeepEqual(got, want) {
				t.Errorf("%s records unreadable_file %v, want %v:\n%s", typ, got, want, b)
			}
		}
	}
	assertChain(t, root)

	desc := fmt.Sprintf("unreadable lock file at %s (%d bytes, modified %s)", path, len(garbage), modified.Format(time.RFC3339))
	madeUp := regexp.MustCompile(`pid 0@|@unknown|1970|held by unknown`)
	for _, args := range [][]string{{"history", "deploy"}, {"timeline", "--lock", "deploy", "--wide"}} {
		out := clitest.Must(t, 0, root, args...).Stdout
		for _, line := range strings.Split(out, "\n") {
			if (strings.Contains(line, "acquire_blocked") || strings.Contains(line, "action_refused")) &&
				(!strings.Contains(line, "held by an "+desc) || madeUp.MatchString(line)) {
				t.Errorf("%s: %s", strings.Join(args, " "), line)
			}
		}
	}
}

// TestReleaseSaysTheLockStaysBlockedEvenQuietly: a release that leaves
// the lock blocked by an unreadable file at its path says so, and how to
// clear it, with --quiet too (an error line: nobody can take the lock
// until someone acts), though it exits 0.
func TestReleaseSaysTheLockStaysBlockedEvenQuietly(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "deploy", "--pid", self).Stdout)
	if err := os.WriteFile(filepath.Join(root, "locks", "deploy.lock"), garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	r := clitest.Must(t, 0, root, "release", "deploy", "--request-id", rid, "--quiet")
	if !strings.Contains(r.Stderr, "the lock stays blocked") || !strings.Contains(r.Stderr, "lockledger project") {
		t.Fatalf("release --quiet does not say the lock stays blocked:\n%s", r.Stderr)
	}
	if strings.Contains(r.Stderr, "released") {
		t.Fatalf("release --quiet printed more than the error line:\n%s", r.Stderr)
	}
}
