package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/schema"
)

// race starts n acquires of one lock at once and returns their results.
func race(t *testing.T, root string, n int) []clitest.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	results := make([]clitest.Result, n)
	cmds := make([]*exec.Cmd, n)
	outs := make([]*bytes.Buffer, n)
	errs := make([]*bytes.Buffer, n)
	for i := range cmds {
		cmds[i] = clitest.Command(ctx, root, "acquire", "contended", "--actor", "racer-"+strconv.Itoa(i))
		outs[i], errs[i] = &bytes.Buffer{}, &bytes.Buffer{}
		cmds[i].Stdout, cmds[i].Stderr = outs[i], errs[i]
	}
	for _, c := range cmds {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for i, c := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.Wait()
			results[i] = clitest.Result{Code: c.ProcessState.ExitCode(), Stdout: outs[i].String(), Stderr: errs[i].String()}
		}()
	}
	wg.Wait()
	return results
}

func TestSixteenConcurrentAcquiresOneWinner(t *testing.T) {
	t.Parallel()
	for _, cold := range []bool{true, false} {
		t.Run(map[bool]string{true: "cold root", false: "warm root"}[cold], func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "root")
			if !cold {
				clitest.Must(t, 0, root, "acquire", "warmup", "--pid", strconv.Itoa(os.Getpid()))
			}
			before := clitest.EventCount(t, root)
			results := race(t, root, 16)
			winners, blocked := 0, 0
			for _, r := range results {
				switch r.Code {
				case 0:
					winners++
				case 3:
					blocked++
				default:
					t.Errorf("exit %d, want 0 or 3; stderr: %s", r.Code, r.Stderr)
				}
			}
			if winners != 1 || blocked != 15 {
				t.Fatalf("got %d winners and %d blocked, want 1 and 15", winners, blocked)
			}
			types := clitest.Types(t, root)[before:]
			count := map[string]int{}
			for _, ty := range types {
				count[ty]++
			}
			if count["lock_acquired"] != 1 || count["acquire_blocked"] != 15 || len(types) != 16 {
				t.Fatalf("events after the race: %v, want 1 lock_acquired and 15 acquire_blocked", count)
			}
			assertChain(t, root)
		})
	}
}

// startHolder runs `sh -c 'lockledger acquire NAME; exec sleep 300'` and
// returns the shell's pid (the recorded holder) once the lock is taken.
func startHolder(t *testing.T, root, lock string, extra ...string) (*exec.Cmd, string) {
	t.Helper()
	args := strings.Join(append([]string{"acquire", lock}, extra...), " ")
	c := exec.Command("sh", "-c", `"$LL" `+args+` || exit 9; exec sleep 300`)
	c.Env = append(clitest.Env(root), "LL="+clitest.Bin())
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("holder did not print a request id: %v", err)
	}
	return c, strings.TrimSpace(line)
}

func TestKilledHolderIsReapedAsHolderDead(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	holder, rid := startHolder(t, root, "jobs")
	st := statusJSON(t, root, "jobs")
	if st["state"] != "held" || int(st["lock"].(map[string]any)["pid"].(float64)) != holder.Process.Pid {
		t.Fatalf("status before kill: %v, want held by pid %d", st, holder.Process.Pid)
	}
	if err := holder.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = holder.Wait()
	if got := statusJSON(t, root, "jobs")["state"]; got != "dead" {
		t.Fatalf("status after SIGKILL: %v, want dead", got)
	}
	r := clitest.Must(t, 0, root, "acquire", "jobs", "--json", "--pid", strconv.Itoa(os.Getpid()))
	var got map[string]any
	if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil {
		t.Fatal(err)
	}
	if got["status"] != "stolen" || got["reason"] != events.ReasonHolderDead {
		t.Fatalf("acquire after death: %v, want stolen with holder_dead", got)
	}
	body := lastBody(t, root, "lock_stolen")
	prev := body["previous_lock"].(map[string]any)
	if body["reason"] != "holder_dead" || prev["request_id"] != rid {
		t.Fatalf("lock_stolen: reason %v previous %v, want holder_dead from %s", body["reason"], prev["request_id"], rid)
	}
}

func TestStaleLockNeedsForceAndIsStolenWithPreviousLock(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "nightly", "--ttl", "1", "--pid", self).Stdout)
	lockFile := filepath.Join(root, "locks", "nightly.lock")
	old, err := os.ReadFile(lockFile)
	if err != nil {
		t.Fatal(err)
	}
	awaitState(t, root, "nightly", "stale", 15*time.Second)

	before := clitest.EventCount(t, root)
	r := clitest.Must(t, 4, root, "acquire", "nightly", "--json", "--pid", self)
	var stale map[string]any
	if err := json.Unmarshal([]byte(r.Stdout), &stale); err != nil {
		t.Fatalf("stale answer is not JSON: %v\n%s", err, r.Stdout)
	}
	if stale["error"] != "lock_stale" || stale["ttl_seconds"].(float64) != 1 || stale["held_by"].(map[string]any)["request_id"] != rid {
		t.Fatalf("stale answer: %v", stale)
	}
	if got := clitest.Types(t, root)[before:]; len(got) != 1 || got[0] != "acquire_blocked" {
		t.Fatalf("events after a stale refusal: %v, want one acquire_blocked", got)
	}
	if blocked := lastBody(t, root, "acquire_blocked"); blocked["state"] != "stale" {
		t.Fatalf("acquire_blocked state %v, want stale", blocked["state"])
	}

	clitest.Must(t, 0, root, "acquire", "nightly", "--force", "--pid", self)
	body := lastBody(t, root, "lock_stolen")
	if body["reason"] != events.ReasonStaleForced {
		t.Fatalf("reason %v, want stale_lock_forced", body["reason"])
	}
	sum := sha256.Sum256(old)
	if want := "sha256:" + hex.EncodeToString(sum[:]); body["previous_lock_hash"] != want {
		t.Fatalf("previous_lock_hash %v, want %s (sha256 of the replaced file)", body["previous_lock_hash"], want)
	}
	var oldRec map[string]any
	if err := json.Unmarshal(old, &oldRec); err != nil {
		t.Fatal(err)
	}
	prev, _ := json.Marshal(body["previous_lock"])
	want, _ := json.Marshal(oldRec)
	if !bytes.Equal(prev, want) {
		t.Fatalf("previous_lock\n got %s\nwant %s", prev, want)
	}
	// An active lock is never stolen by --force.
	clitest.Must(t, 3, root, "acquire", "nightly", "--force", "--pid", self)
}

func TestReleaseByWrongOwnerIsRefusedAndLockStays(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "app-prod", "--pid", self).Stdout)
	lockFile := filepath.Join(root, "locks", "app-prod.lock")
	before, _ := os.ReadFile(lockFile)
	n := clitest.EventCount(t, root)
	r := clitest.Must(t, 5, root, "release", "app-prod", "--request-id", "req_someone_else")
	if !strings.Contains(r.Stderr, rid) {
		t.Errorf("refusal should name the holder %s: %s", rid, r.Stderr)
	}
	after, err := os.ReadFile(lockFile)
	if err != nil || !bytes.Equal(before, after) {
		t.Fatalf("lock file changed by a refused release: %v", err)
	}
	if st := statusJSON(t, root, "app-prod"); st["state"] != "held" || st["request_id"] != rid {
		t.Fatalf("status after refused release: %v", st)
	}
	if got := clitest.Types(t, root)[n:]; len(got) != 1 || got[0] != "action_refused" {
		t.Fatalf("refused release wrote %v, want one action_refused", got)
	}
	// The owner releases; a second release is a no-op.
	clitest.Must(t, 0, root, "release", "app-prod", "--request-id", rid, "--result", "failure", "--failure-step", "migrate", "--exit-code", "7")
	clitest.Must(t, 0, root, "release", "app-prod", "--request-id", rid)
	if got := clitest.EventCount(t, root); got != n+2 {
		t.Fatalf("release + idempotent release wrote %d events, want 1", got-n)
	}
	rel := lastBody(t, root, "lock_released")
	if rel["result"] != "failure" || rel["failure_step"] != "migrate" || rel["exit_code"].(float64) != 7 || rel["forced"] != false {
		t.Fatalf("lock_released: %v", rel)
	}
	if _, err := os.Stat(lockFile); !os.IsNotExist(err) {
		t.Fatalf("lock file still there after release: %v", err)
	}
	// The lock was stolen from rid2: its release is "lost" (exit 5).
	rid2 := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "app-prod", "--pid", self).Stdout)
	clitest.Must(t, 0, root, "steal", "app-prod", "--active", "--yes", "--reason", "test takeover", "--pid", self)
	r = clitest.Must(t, 5, root, "release", "app-prod", "--request-id", rid2)
	if !strings.Contains(r.Stderr, "lost the lock") {
		t.Errorf("release after a steal should say the lock was lost: %s", r.Stderr)
	}
	if st := lastBody(t, root, "lock_stolen"); st["reason"] != "forced_active" || st["note"] != "test takeover" {
		t.Fatalf("steal --active: %v", st)
	}
	// A forced release by someone else is recorded as forced, naming the holder.
	holder := statusJSON(t, root, "app-prod")["request_id"]
	clitest.Must(t, 0, root, "release", "app-prod", "--force", "--yes", "--reason", "cleanup", "--actor", "oncall")
	rel = lastBody(t, root, "lock_released")
	if rel["forced"] != true || rel["released_request_id"] != holder || rel["actor"] != "oncall" {
		t.Fatalf("forced release: %v", rel)
	}
	assertChain(t, root)
}

func TestEventsAreAppendOnly(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	clitest.Must(t, 0, root, "acquire", "x", "--pid", strconv.Itoa(os.Getpid()))
	for _, stmt := range []string{
		`UPDATE events SET actor = 'mallory' WHERE seq = 1`,
		`DELETE FROM events WHERE seq = 1`,
	} {
		out, err := exec.Command("sqlite3", filepath.Join(root, "ledger.db"), stmt).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "append-only") {
			t.Errorf("%s: err %v, output %q; want refusal by trigger", stmt, err, out)
		}
	}
	if n := clitest.EventCount(t, root); n != 1 {
		t.Fatalf("events after refused tampering: %d, want 1", n)
	}
	assertChain(t, root)
}

func TestLockFilesAreV1AndPrivate(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "fresh")
	rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "money-tracker-production", "--intent", "deploy-app",
		"--intent-version", "1.2.0", "--metadata", "commit=abc", "--actor", "claude-code", "--pid", strconv.Itoa(os.Getpid())).Stdout)
	p := filepath.Join(root, "locks", "money-tracker-production.lock")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(schema.LockFile, data); err != nil {
		t.Fatalf("lock file is not schema-valid: %v\n%s", err, data)
	}
	rec, err := ledger.ParseLockFile(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.File(); !bytes.Equal(got, data) {
		t.Fatalf("lock file is not in canonical v1 layout:\n got %s\nwant %s", data, got)
	}
	out, err := exec.Command("jq", "-r", ".request_id, .lock_version, .ttl_seconds, .metadata.commit", p).Output()
	if err != nil {
		t.Fatalf("jq: %v", err)
	}
	if got, want := string(out), rid+"\nv1\n900\nabc\n"; got != want {
		t.Fatalf("jq read %q, want %q", got, want)
	}
	keys, _ := exec.Command("jq", "-r", "keys_unsorted | join(\",\")", p).Output()
	if got, want := strings.TrimSpace(string(keys)),
		"lock_version,lock_name,request_id,actor,intent,intent_version,host_id,pid,created_at,last_heartbeat_at,ttl_seconds,metadata"; got != want {
		t.Fatalf("field order %s, want the spec's %s", got, want)
	}
	for path, want := range map[string]os.FileMode{
		root: 0o700, filepath.Join(root, "locks"): 0o700, filepath.Join(root, "ledger.db"): 0o600, p: 0o600,
	} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o", path, got, want)
		}
	}
}

func TestForeignLockFilesAreHonoured(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	clitest.Must(t, 0, root, "acquire", "other", "--pid", self)
	host, _ := os.Hostname()
	now := time.Now().UTC()
	write := func(name, hostID string, pid int, beat time.Time) {
		rec := events.Record{LockVersion: "v1", LockName: name, RequestID: "req_foreign", Actor: "tower", Intent: "deploy-app",
			IntentVersion: "1", HostID: hostID, PID: pid, CreatedAt: events.FormatLockTime(beat),
			LastHeartbeatAt: events.FormatLockTime(beat), TTLSeconds: 900}
		if err := os.WriteFile(filepath.Join(root, "locks", name+".lock"), rec.File(), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Active, on another host: held, whatever its pid.
	write("remote", "tower-01", 1, now)
	r := clitest.Must(t, 3, root, "acquire", "remote", "--json", "--pid", self)
	if !strings.Contains(r.Stdout, `"foreign":true`) || !strings.Contains(r.Stdout, `"error":"lock_blocked"`) {
		t.Fatalf("foreign active lock: %s", r.Stdout)
	}
	if ls := clitest.Must(t, 0, root, "list").Stdout; !strings.Contains(ls, "req_foreign (foreign)") {
		t.Fatalf("list does not show the foreign lock:\n%s", ls)
	}
	// On this host with a pid that is gone: tower-fleet's pid is
	// informational only, so a fresh heartbeat still holds it;
	// once the heartbeat is older than the TTL it is stale, and --force takes
	// it over as foreign_lock.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	write("local", host, gone.Process.Pid, now)
	clitest.Must(t, 3, root, "acquire", "local", "--pid", self)
	write("local", host, gone.Process.Pid, now.Add(-time.Hour))
	clitest.Must(t, 4, root, "acquire", "local", "--pid", self)
	clitest.Must(t, 0, root, "acquire", "local", "--force", "--pid", self)
	if b := lastBody(t, root, "lock_stolen"); b["reason"] != events.ReasonForeignLock || b["previous_lock"].(map[string]any)["request_id"] != "req_foreign" {
		t.Fatalf("foreign stale lock: %v", b)
	}
	// Unreadable: held, to fail safe, and said so.
	if err := os.WriteFile(filepath.Join(root, "locks", "garbled.lock"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = clitest.Must(t, 3, root, "acquire", "garbled", "--force", "--pid", self)
	if !strings.Contains(r.Stderr, "unreadable") {
		t.Fatalf("corrupt lock file: %s", r.Stderr)
	}
	// A symlink at a lock path is never followed.
	target := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.WriteFile(target, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(root, "locks", "linked.lock")); err != nil {
		t.Fatal(err)
	}
	n := clitest.EventCount(t, root)
	r = clitest.Must(t, 1, root, "acquire", "linked", "--force", "--pid", self)
	if !strings.Contains(r.Stderr, "symlink") {
		t.Fatalf("symlink lock path: %s", r.Stderr)
	}
	if b, _ := os.ReadFile(target); string(b) != "precious" || clitest.EventCount(t, root) != n {
		t.Fatalf("symlink target or ledger changed")
	}
}

func TestFencingTokensIncreasePerLock(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	last := 0.0
	for i := 0; i < 4; i++ {
		r := clitest.Must(t, 0, root, "acquire", "fenced", "--json", "--pid", self)
		var o map[string]any
		if err := json.Unmarshal([]byte(r.Stdout), &o); err != nil {
			t.Fatal(err)
		}
		tok := o["fencing_token"].(float64)
		if tok <= last {
			t.Fatalf("fencing token %v after %v: not increasing", tok, last)
		}
		last = tok
		clitest.Must(t, 0, root, "acquire", "noise", "--pid", self)
		clitest.Must(t, 0, root, "release", "noise", "--force", "--yes", "--reason", "cleanup")
		clitest.Must(t, 0, root, "release", "fenced", "--request-id", o["request_id"].(string))
	}
}

// The audit commands need a ledger, and so does status: none answers
// without one (exit 6), and none creates anything.
func TestReadOnlyCommandsNeedALedger(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "nothing")
	r := clitest.Must(t, 6, root, "timeline")
	if !strings.Contains(r.Stderr, "no ledger") {
		t.Fatalf("timeline on an empty root: %s", r.Stderr)
	}
	if r := clitest.Must(t, 6, root, "status", "x"); strings.Contains(r.Stdout, "free") || !strings.Contains(r.Stderr, "no ledger") {
		t.Fatalf("status on an empty root: %s %s", r.Stdout, r.Stderr)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Fatalf("a read-only command created the root")
	}
}

// --- helpers ---

func statusJSON(t *testing.T, root, lock string) map[string]any {
	t.Helper()
	r := clitest.Must(t, 0, root, "status", lock, "--json")
	var m map[string]any
	if err := json.Unmarshal([]byte(r.Stdout), &m); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r.Stdout)
	}
	return m
}

// awaitState polls status until the lock reaches state, or fails at the deadline.
func awaitState(t *testing.T, root, lock, state string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := statusJSON(t, root, lock)["state"]
		if got == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("lock %s still %v after %s, want %s", lock, got, within, state)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func lastBody(t *testing.T, root, typ string) map[string]any {
	t.Helper()
	var body []byte
	if err := clitest.DB(t, root).QueryRow(`SELECT body FROM events WHERE type = ? ORDER BY seq DESC LIMIT 1`, typ).Scan(&body); err != nil {
		t.Fatalf("no %s event: %v", typ, err)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// assertChain recomputes the hash chain and checks every body against its schema.
func assertChain(t *testing.T, root string) {
	t.Helper()
	db := clitest.DB(t, root)
	var id string
	if err := db.QueryRow(`SELECT value FROM meta WHERE key = 'ledger_id'`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query(`SELECT seq, type, lock_name, request_id, actor, at, body, prev_hash, hash FROM events ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	prev, want := events.Genesis(id), int64(1)
	for rows.Next() {
		var seq int64
		var typ, lock, req, actor, at, prevHash, hash string
		var body []byte
		if err := rows.Scan(&seq, &typ, &lock, &req, &actor, &at, &body, &prevHash, &hash); err != nil {
			t.Fatal(err)
		}
		if seq != want || prevHash != prev {
			t.Fatalf("seq %d: want seq %d chained from %s, got prev %s", seq, want, prev, prevHash)
		}
		if got := events.ChainHash(seq, prevHash, body); got != hash {
			t.Fatalf("seq %d: hash %s, recomputed %s", seq, hash, got)
		}
		if err := schema.ValidateEvent(events.Type(typ), body); err != nil {
			t.Fatalf("seq %d: %v", seq, err)
		}
		env, _, err := events.Decode(body)
		if err != nil {
			t.Fatal(err)
		}
		if string(env.Type) != typ || env.LockName != lock || env.RequestID != req || env.Actor != actor || env.At != at || env.Seq != seq {
			t.Fatalf("seq %d: columns disagree with the body", seq)
		}
		prev, want = hash, want+1
	}
}

func lockFiles(t *testing.T, root string) string {
	t.Helper()
	entries, _ := os.ReadDir(filepath.Join(root, "locks"))
	var b strings.Builder
	for _, e := range entries {
		data, _ := os.ReadFile(filepath.Join(root, "locks", e.Name()))
		sum := sha256.Sum256(data)
		b.WriteString(e.Name() + ":" + hex.EncodeToString(sum[:4]) + " ")
	}
	return b.String()
}
