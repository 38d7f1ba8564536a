package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockledger/lockledger/formats"
	"github.com/lockledger/lockledger/internal/clitest"
)

// sleeper starts a process that stays alive until the test ends (or kill is
// called) and returns its pid.
func sleeper(t *testing.T) (pid int, kill func()) {
	t.Helper()
	c := exec.Command("sleep", "600")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := false
	kill = func() {
		if !done {
			done = true
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}
	t.Cleanup(kill)
	return c.Process.Pid, kill
}

// takeOver writes another tool's live lock at path the way that tool
// does after judging the old holder gone: remove, then create its own.
func takeOver(t *testing.T, format, path, lock string, pid int) []byte {
	t.Helper()
	host, _ := os.Hostname()
	f, err := formats.Lookup(format)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	data, err := f.Render(formats.Holder{Lock: lock, RequestID: "other-tool-1", Actor: "other-tool", Intent: "its own work",
		HostID: host, PID: pid, CreatedAt: now, HeartbeatAt: now, TTL: 900 * time.Second, Metadata: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return data
}

// lockPaths is where a lock of format lives for a test: the ledger's own
// file for tower-fleet, a --file target for the other formats.
func lockPaths(t *testing.T, root, format, lock string) (path string, fileArgs []string) {
	if format == formats.NameTowerFleet {
		return filepath.Join(root, "locks", lock+".lock"), nil
	}
	p := filepath.Join(t.TempDir(), format+".lock")
	return p, []string{"--file", format + ":" + p}
}

func TestAnotherToolsTakeOverOfADeadHolderIsNeverOverwritten(t *testing.T) {
	t.Parallel()
	for _, format := range formats.Names() {
		t.Run(format, func(t *testing.T) {
			root := t.TempDir()
			path, fileArgs := lockPaths(t, root, format, "7")
			old, killOld := sleeper(t)
			clitest.Must(t, 0, root, append([]string{"acquire", "7", "--request-id", "ours", "--pid", strconv.Itoa(old)}, fileArgs...)...)
			killOld() // the ledger's holder is dead: the other tool may take the lock by its rules
			other, killOther := sleeper(t)
			theirs := takeOver(t, format, path, "7", other)
			if st := statusJSON(t, root, "7"); st["state"] != "held" || st["foreign"] != true || st["displaced"] == nil {
				t.Fatalf("status before any writer met the take-over: %v, want held by the other tool, ours displaced", st)
			}

			me, _ := sleeper(t)
			for _, args := range [][]string{
				append([]string{"acquire", "7", "--pid", strconv.Itoa(me)}, fileArgs...),
				{"acquire", "7", "--pid", strconv.Itoa(me)}, // without --file: the lock remembers its paths
				append([]string{"acquire", "7", "--force", "--pid", strconv.Itoa(me)}, fileArgs...),
			} {
				r := clitest.Run(t, root, args...)
				if r.Code != 3 {
					t.Fatalf("lockledger %s over the other tool's live lock: exit %d, want 3\n%s", strings.Join(args, " "), r.Code, r.Stderr)
				}
				if got, _ := os.ReadFile(path); string(got) != string(theirs) {
					t.Fatalf("the other tool's live lock was changed by %v:\n%s", args, got)
				}
			}
			sup := lastBody(t, root, "lock_released")
			if sup["released_request_id"] != "ours" || sup["forced"] != true || sup["superseded_by_format"] != format || sup["superseded_by_path"] != path {
				t.Fatalf("the ledger's dead holder is not recorded as displaced by the %s lock at %s: %v", format, path, sup)
			}
			if by, _ := sup["superseded_by"].(map[string]any); by == nil || by["pid"] != float64(other) {
				t.Fatalf("superseded_by %v, want the other tool's holder (pid %d)", sup["superseded_by"], other)
			}
			if n := len(clitest.Strings(t, root, `SELECT seq FROM events WHERE type = 'lock_released'`)); n != 1 {
				t.Fatalf("the displacement was recorded %d times, want once", n)
			}

			// The old holder's own commands cannot touch it either.
			clitest.Must(t, 5, root, "heartbeat", "7", "--request-id", "ours")
			clitest.Run(t, root, "release", "7", "--request-id", "ours")
			if got, _ := os.ReadFile(path); string(got) != string(theirs) {
				t.Fatalf("the old holder's heartbeat or release changed the other tool's lock:\n%s", got)
			}
			clitest.Must(t, 0, root, "verify")

			if format == formats.NameGitClaw || format == formats.NameTowerFleet {
				return // gitclaw and tower-fleet judge by age, not by pid: the lock stays live for its TTL
			}
			killOther()
			clitest.Must(t, 0, root, append([]string{"acquire", "7", "--pid", strconv.Itoa(me)}, fileArgs...)...)
			if st := lastBody(t, root, "lock_stolen"); st["reason"] != "foreign_lock" {
				t.Fatalf("taking over the other tool's dead lock: reason %v, want foreign_lock", st["reason"])
			}
			clitest.Must(t, 0, root, "verify")
		})
	}
}

func TestAStaleHolderIsDisplacedByAnotherToolsForcedTakeOver(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	old, _ := sleeper(t)
	clitest.Must(t, 0, root, "acquire", "j", "--request-id", "ours", "--ttl", "1", "--pid", strconv.Itoa(old))
	awaitState(t, root, "j", "stale", 30*time.Second)
	other, _ := sleeper(t)
	path := filepath.Join(root, "locks", "j.lock")
	theirs := takeOver(t, formats.NameTowerFleet, path, "j", other) // tower-fleet's own force over a stale lock

	me, _ := sleeper(t)
	r := clitest.Run(t, root, "acquire", "j", "--force", "--pid", strconv.Itoa(me))
	if r.Code != 3 {
		t.Fatalf("acquire --force over tower-fleet's live lock: exit %d, want 3\n%s", r.Code, r.Stderr)
	}
	if got, _ := os.ReadFile(path); string(got) != string(theirs) {
		t.Fatalf("acquire --force overwrote the other tool's lock:\n%s", got)
	}
	if sup := lastBody(t, root, "lock_released"); sup["released_request_id"] != "ours" || sup["superseded_by_format"] != "tower-fleet" {
		t.Fatalf("the stale holder is not recorded as displaced: %v", sup)
	}
	st := clitest.Must(t, 0, root, "status", "j", "--json").Stdout
	if !strings.Contains(st, `"other-tool-1"`) {
		t.Fatalf("status does not show the other tool's holder:\n%s", st)
	}
}

func TestALiveRunLosesItsLockToAnotherToolsForcedTakeOver(t *testing.T) {
	t.Parallel()
	root, dir := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "bso.lock")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := clitest.Command(ctx, root, "run", "j", "--ttl", "3", "--kill-grace", "1s", "--file", "bso:"+path, "--", "sleep", "300")
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	awaitRunning(t, root, "j")
	other, _ := sleeper(t)
	theirs := takeOver(t, formats.NameBSO, path, "j", other) // an operator's forced take-over in BSO
	err := run.Wait()
	if code := exitCode(err); code != 5 {
		t.Fatalf("run after losing its lock to another tool: exit %d (%v), want 5", code, err)
	}
	if got, _ := os.ReadFile(path); string(got) != string(theirs) {
		t.Fatalf("the run's heartbeat or release changed the other tool's lock:\n%s", got)
	}
	if sup := lastBody(t, root, "lock_released"); sup["superseded_by_format"] != "bso" {
		t.Fatalf("the run's loss is not recorded as displaced: %v", sup)
	}
	if refused := clitest.Strings(t, root, `SELECT body FROM events WHERE type = 'action_refused'`); len(refused) > 0 {
		t.Fatalf("a run that knew its lock was taken still tried to release it: %v", refused)
	}
}

func TestAReusedRequestIDFromAnotherProcessIsRefusedUnlessReclaimed(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	first, _ := sleeper(t)
	second, _ := sleeper(t)
	clitest.Must(t, 0, root, "acquire", "j", "--request-id", "job-7", "--pid", strconv.Itoa(first))
	again := clitest.Must(t, 0, root, "acquire", "j", "--request-id", "job-7", "--pid", strconv.Itoa(first), "--json")
	if !strings.Contains(again.Stdout, `"already_held"`) && !strings.Contains(again.Stdout, "already") {
		t.Fatalf("the same process re-acquiring: %s", again.Stdout)
	}
	before := clitest.EventCount(t, root)

	r := clitest.Run(t, root, "acquire", "j", "--request-id", "job-7", "--pid", strconv.Itoa(second))
	if r.Code != 3 || !strings.Contains(r.Stderr, "--reclaim") {
		t.Fatalf("the same request id from another process: exit %d, want 3 naming --reclaim\n%s", r.Code, r.Stderr)
	}
	if got := clitest.Types(t, root)[before:]; len(got) != 1 || got[0] != "acquire_blocked" {
		t.Fatalf("refusal recorded as %v, want one acquire_blocked", got)
	}

	clitest.Must(t, 0, root, "acquire", "j", "--request-id", "job-7", "--pid", strconv.Itoa(second), "--reclaim")
	st := lastBody(t, root, "lock_stolen")
	prev, _ := st["previous_lock"].(map[string]any)
	if st["reason"] != "reclaimed" || st["pid"] != float64(second) || prev["pid"] != float64(first) {
		t.Fatalf("reclaim recorded as %v", st)
	}
	clitest.Must(t, 3, root, "acquire", "j", "--request-id", "job-7", "--pid", strconv.Itoa(first))
	clitest.Must(t, 0, root, "verify")
}

func TestARunWhoseRequestIDIsReclaimedStops(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := clitest.Command(ctx, root, "run", "j", "--request-id", "job-8", "--ttl", "3", "--kill-grace", "1s", "--", "sleep", "300")
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	awaitRunning(t, root, "j")
	me, _ := sleeper(t)
	clitest.Must(t, 0, root, "acquire", "j", "--request-id", "job-8", "--reclaim", "--pid", strconv.Itoa(me))
	if code := exitCode(run.Wait()); code != 5 {
		t.Fatalf("run whose request id was reclaimed: exit %d, want 5", code)
	}
	out := clitest.Must(t, 0, root, "status", "j", "--json").Stdout
	if !strings.Contains(out, `"pid": `+strconv.Itoa(me)) && !strings.Contains(out, `"pid":`+strconv.Itoa(me)) {
		t.Fatalf("the reclaimed lock is no longer the reclaimer's after the old run stopped:\n%s", out)
	}
}

// awaitRunning waits until a run started in the background holds lock.
func awaitRunning(t *testing.T, root, lock string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := clitest.Run(t, root, "status", lock, "--json")
		if r.Code == 0 && strings.Contains(r.Stdout, `"state":"held"`) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("lock %s never became held: %s %s", lock, r.Stdout, r.Stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return -1
}

// towerFleet runs tower-fleet's own lock manager (e2e/testdata, from its
// specification) with LOCK_DIR at root's locks directory.
func towerFleet(t *testing.T, root, script string) *exec.Cmd {
	t.Helper()
	clitest.NeedBinary(t, "bash", "jq")
	lib, err := filepath.Abs("testdata/tower-fleet-lock-manager.sh")
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command("bash", "-c", "source \"$LIB\"; "+script)
	c.Env = append(os.Environ(), "LIB="+lib, "LOCK_DIR="+filepath.Join(root, "locks"), "ACTOR=tower-fleet-executor")
	return c
}

func TestTowerFleetsOwnForcedTakeOverOfAStaleLockIsLeftAlone(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	path := filepath.Join(root, "locks", "j.lock")
	old, _ := sleeper(t)
	clitest.Must(t, 0, root, "acquire", "j", "--request-id", "ours", "--ttl", "1", "--pid", strconv.Itoa(old))
	awaitState(t, root, "j", "stale", 30*time.Second)

	// tower-fleet's executor with --force-lock once its own check calls the
	// lock stale (whole seconds), which then keeps running (exec keeps its
	// pid, the one it wrote into the lock).
	tf := towerFleet(t, root, `until is_lock_stale "$LOCK_DIR/j.lock"; do sleep 0.1; done; acquire_lock j tf-req-1 deploy-app 1.2.0 true && exec sleep 600`)
	var tfErr strings.Builder
	tf.Stderr = &tfErr
	if err := tf.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tf.Process.Kill(); _ = tf.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	var theirs []byte
	for {
		theirs, _ = os.ReadFile(path)
		if strings.Contains(string(theirs), `"tf-req-1"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tower-fleet never took the stale lock: %s\ntower-fleet said: %s", theirs, tfErr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}

	me, _ := sleeper(t)
	r := clitest.Run(t, root, "acquire", "j", "--force", "--pid", strconv.Itoa(me))
	if r.Code != 3 {
		t.Fatalf("acquire --force over tower-fleet's live lock: exit %d, want 3\n%s", r.Code, r.Stderr)
	}
	clitest.Must(t, 5, root, "heartbeat", "j", "--request-id", "ours")
	if got, _ := os.ReadFile(path); string(got) != string(theirs) {
		t.Fatalf("lockledger changed tower-fleet's lock:\n%s", got)
	}
	if sup := lastBody(t, root, "lock_released"); sup["released_request_id"] != "ours" || sup["superseded_by_format"] != "tower-fleet" {
		t.Fatalf("the stale holder is not recorded as displaced by tower-fleet: %v", sup)
	}
	if out, err := towerFleet(t, root, `is_lock_stale "$LOCK_DIR/j.lock" && echo stale || echo active`).Output(); err != nil || strings.TrimSpace(string(out)) != "active" {
		t.Fatalf("tower-fleet's own staleness check on its lock: %q %v", out, err)
	}

	// tower-fleet releases by its own rules; the lock is free for lockledger.
	if out, err := towerFleet(t, root, `release_lock j tf-req-1`).CombinedOutput(); err != nil {
		t.Fatalf("tower-fleet's release: %v\n%s", err, out)
	}
	clitest.Must(t, 0, root, "acquire", "j", "--pid", strconv.Itoa(me))
	clitest.Must(t, 0, root, "verify")
}

func TestALockKeepsJudgingAndProjectingThePathsItRemembers(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	path := filepath.Join(t.TempDir(), "sprint.bso")
	me, _ := sleeper(t)
	rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "7", "--file", "bso:"+path, "--pid", strconv.Itoa(me)).Stdout)
	clitest.Must(t, 0, root, "release", "7", "--request-id", rid)

	// A BSO session takes the sprint file by its own rules; status and
	// list show it, though the ledger's row is free.
	bso, killBSO := sleeper(t)
	takeOver(t, formats.NameBSO, path, "7", bso)
	if st := statusJSON(t, root, "7"); st["state"] != "held" || st["foreign"] != true {
		t.Fatalf("status with another tool's live lock at the path the lock remembers: %v", st)
	}
	if ls := clitest.Must(t, 0, root, "list").Stdout; !strings.Contains(ls, "7 ") || !strings.Contains(ls, "held") {
		t.Fatalf("list does not show another tool's live lock at a remembered path:\n%s", ls)
	}
	clitest.Must(t, 3, root, "acquire", "7", "--pid", strconv.Itoa(me))

	// Its session dies: lockledger takes over, and its own file replaces
	// the dead one there, so BSO sees lockledger's holder at that path.
	killBSO()
	rid = strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "7", "--pid", strconv.Itoa(me)).Stdout)
	got, _ := os.ReadFile(path)
	if !strings.Contains(string(got), rid) {
		t.Fatalf("after taking over the dead BSO lock at the remembered path, the file there is not lockledger's:\n%s", got)
	}
	clitest.Must(t, 0, root, "verify")
	clitest.Must(t, 0, root, "release", "7", "--request-id", rid)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("release left the ledger's file at the remembered path (%v)", err)
	}
}

func TestProjectRecordsAnotherToolsTakeOverItFinds(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	old, killOld := sleeper(t)
	clitest.Must(t, 0, root, "acquire", "j", "--request-id", "ours", "--pid", strconv.Itoa(old))
	killOld()
	other, _ := sleeper(t)
	path := filepath.Join(root, "locks", "j.lock")
	theirs := takeOver(t, formats.NameTowerFleet, path, "j", other)
	clitest.Must(t, 1, root, "verify")
	clitest.Must(t, 0, root, "project")
	if sup := lastBody(t, root, "lock_released"); sup["released_request_id"] != "ours" || sup["superseded_by_format"] != "tower-fleet" {
		t.Fatalf("project did not record the displacement it found: %v", sup)
	}
	if got, _ := os.ReadFile(path); string(got) != string(theirs) {
		t.Fatalf("project changed the other tool's lock:\n%s", got)
	}
	clitest.Must(t, 0, root, "verify")
}

// TestStatusOfAnotherToolsHolderSaysWhenItsFormatCarriesNoTTL: a holder
// read from a bso, beads or prodigy file has no TTL (those formats carry
// none): status, status --json and list say so instead of showing the
// placeholder "1s"; tower-fleet and gitclaw files show theirs.
func TestStatusOfAnotherToolsHolderSaysWhenItsFormatCarriesNoTTL(t *testing.T) {
	t.Parallel()
	for _, format := range formats.Names() {
		t.Run(format, func(t *testing.T) {
			root := t.TempDir()
			path, fileArgs := lockPaths(t, root, format, "7")
			old, killOld := sleeper(t)
			clitest.Must(t, 0, root, append([]string{"acquire", "7", "--pid", strconv.Itoa(old)}, fileArgs...)...)
			killOld()
			other, _ := sleeper(t)
			takeOver(t, format, path, "7", other)
			carries := format == formats.NameTowerFleet || format == formats.NameGitClaw
			text := clitest.Must(t, 0, root, "status", "7").Stdout
			list := clitest.Must(t, 0, root, "list").Stdout
			st := statusJSON(t, root, "7")
			if st["foreign"] != true {
				t.Fatalf("status --json: %v, want the other tool's holder", st)
			}
			switch {
			case carries && (strings.Contains(text, "no TTL") || !strings.Contains(text, "(ttl ") || st["no_ttl"] != nil):
				t.Fatalf("a %s holder carries a TTL:\n%s\n%v", format, text, st)
			case !carries && (strings.Contains(text, "ttl 1s") || !strings.Contains(text, "no TTL: "+format+" lock files carry none") ||
				st["no_ttl"] != true || st["holder_format"] != format):
				t.Fatalf("a %s holder (no TTL in that format):\n%s\n%v", format, text, st)
			case !carries && (strings.HasSuffix(strings.TrimSpace(list), "1s") || !strings.HasSuffix(strings.TrimSpace(list), "none")):
				t.Fatalf("list of a %s holder (no TTL in that format):\n%s", format, list)
			}
		})
	}
}
