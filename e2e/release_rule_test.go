package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/clitest"
)

// lastEvent is the newest event of root's ledger: its type and body.
func lastEvent(t *testing.T, root string) (string, map[string]any) {
	t.Helper()
	var typ, body string
	if err := clitest.DB(t, root).QueryRow(`SELECT type, body FROM events ORDER BY seq DESC LIMIT 1`).Scan(&typ, &body); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	return typ, m
}

// TestReleaseIsTheHolders: in a root two users share, another uid that
// names the holder's request id is refused without --force (exit 5, the
// rule and --force --reason named, recorded as action_refused under the
// caller's uid); --force needs --reason (exit 2); with both the lock is
// released, recorded under the caller's actor, pid and uid, its payload
// naming the holder and the holder's uid. The holder's own uid releases
// with a plain release.
func TestReleaseIsTheHolders(t *testing.T) {
	t.Parallel()
	team := newTeamRoot(t)
	root := team.root
	as := func(uid int, actor string, args ...string) clitest.Result {
		t.Helper()
		return team.run(asUser{uid: uid, env: []string{"LOCKLEDGER_ACTOR=" + actor}}, args...)
	}
	must := func(uid int, actor string, args ...string) string {
		t.Helper()
		return team.must(asUser{uid: uid, env: []string{"LOCKLEDGER_ACTOR=" + actor}}, args...)
	}
	num := func(m map[string]any, k string) int { t.Helper(); return intField(t, m, k) }

	rid := must(aliceUID, "alice", "--group", strconv.Itoa(teamGID), "acquire", "deploy")

	// Bob read the request id (status, list, history print it): a plain
	// release by it is refused, and recorded as his.
	r := as(bobUID, "bob", "release", "deploy", "--request-id", rid)
	if r.Code != 5 || !strings.Contains(r.Stderr, "uid "+strconv.Itoa(bobUID)) ||
		!strings.Contains(r.Stderr, "--force --reason") {
		t.Fatalf("bob's plain release of alice's lock: exit %d, want 5 naming the rule\n%s", r.Code, r.Stderr)
	}
	typ, ev := lastEvent(t, root)
	if typ != "action_refused" || ev["actor"] != "bob" || num(ev, "uid") != bobUID || ev["action"] != "release" {
		t.Fatalf("the refusal is recorded as %s %v, want action_refused by bob (uid %d)", typ, ev, bobUID)
	}
	if st := must(bobUID, "bob", "status", "deploy"); !strings.Contains(st, "held") {
		t.Fatalf("the refused release freed the lock: %s", st)
	}
	r = as(bobUID, "bob", "release", "deploy", "--request-id", rid, "--json")
	var obj map[string]any
	if err := json.Unmarshal([]byte(r.Stdout), &obj); err != nil || obj["error"] != "not_holder" || obj["denied"] == nil {
		t.Fatalf("--json refusal: %v %s", err, r.Stdout)
	}

	// --force names no reason: bad input, nothing recorded.
	n := clitest.EventCount(t, root)
	r = as(bobUID, "bob", "release", "deploy", "--request-id", rid, "--force", "--yes")
	if r.Code != 2 || !strings.Contains(r.Stderr, "--reason") {
		t.Fatalf("--force without --reason: exit %d, want 2 naming --reason\n%s", r.Code, r.Stderr)
	}
	if clitest.EventCount(t, root) != n {
		t.Fatal("--force without --reason wrote an event")
	}

	must(bobUID, "bob", "release", "deploy", "--request-id", rid, "--force", "--yes", "--reason", "INC-7: alice is away")
	typ, ev = lastEvent(t, root)
	held, _ := ev["held_by"].(map[string]any)
	if typ != "lock_released" || ev["actor"] != "bob" || num(ev, "uid") != bobUID || ev["forced"] != true ||
		ev["released_request_id"] != rid || held == nil || held["request_id"] != rid || held["actor"] != "alice" ||
		num(held, "uid") != aliceUID {
		t.Fatalf("bob's forced release is recorded as %s %v, want bob's, naming alice's holding", typ, ev)
	}

	// The holder's own uid releases plainly, and the release is hers.
	rid = must(aliceUID, "alice", "acquire", "deploy")
	must(aliceUID, "alice", "release", "deploy", "--request-id", rid)
	typ, ev = lastEvent(t, root)
	if typ != "lock_released" || ev["actor"] != "alice" || num(ev, "uid") != aliceUID || ev["forced"] != false {
		t.Fatalf("alice's release is recorded as %s %v", typ, ev)
	}

	// A steal is the stealer's; held_by adds the uid that acquired the holding taken.
	rid = must(aliceUID, "alice", "acquire", "deploy")
	must(bobUID, "bob", "steal", "deploy", "--active", "--yes", "--reason", "INC-8")
	typ, ev = lastEvent(t, root)
	held, _ = ev["held_by"].(map[string]any)
	if typ != "lock_stolen" || ev["actor"] != "bob" || num(ev, "uid") != bobUID || held == nil ||
		held["request_id"] != rid || num(held, "uid") != aliceUID {
		t.Fatalf("bob's steal is recorded as %s %v, want bob's, naming alice's holding and uid", typ, ev)
	}
	if out := must(aliceUID, "alice", "verify"); !strings.Contains(out, "verify: OK") {
		t.Fatalf("verify: %s", out)
	}
}

// TestReleaseOfARunningRun: a plain release of a holding of a running
// lockledger run is refused, even from the run's own uid (the run releases
// it when its command ends); --force --reason releases it.
func TestReleaseOfARunningRun(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	clitest.Must(t, 0, root, "init")
	c, lines := startRun(t, root, "job", "--", "sh", "-c", `echo "$LOCKLEDGER_REQUEST_ID"; exec sleep 300`)
	rid := line(t, lines)
	if b := lastBody(t, root, "lock_acquired"); b["run"] != true {
		t.Fatalf("the run's lock_acquired does not record it as a run: %v", b)
	}
	r := clitest.Run(t, root, "release", "job", "--request-id", rid)
	if r.Code != 5 || !strings.Contains(r.Stderr, "lockledger run") || !strings.Contains(r.Stderr, "--force --reason") {
		t.Fatalf("plain release of a running run's lock: exit %d, want 5 naming the rule\n%s", r.Code, r.Stderr)
	}
	if typ, ev := lastEvent(t, root); typ != "action_refused" || ev["action"] != "release" {
		t.Fatalf("the refusal is recorded as %s %v", typ, ev)
	}
	if st := clitest.Must(t, 0, root, "status", "job").Stdout; !strings.Contains(st, "held") {
		t.Fatalf("the refused release freed the lock: %s", st)
	}
	clitest.Must(t, 0, root, "release", "job", "--request-id", rid, "--force", "--yes", "--reason", "stuck")
	// The robbed run records its loss at once: read the release itself.
	typ, ev := "lock_released", lastBody(t, root, "lock_released")
	held, _ := ev["held_by"].(map[string]any)
	if typ != "lock_released" || ev["forced"] != true || held == nil || held["request_id"] != rid ||
		int(held["pid"].(float64)) != c.Process.Pid {
		t.Fatalf("the forced release is recorded as %s %v, want one naming the run (pid %d)", typ, ev, c.Process.Pid)
	}
	if ev["pid"] == held["pid"] {
		t.Fatalf("the forced release's envelope is the run's: %v", ev)
	}
}

// TestReleaseOfARunWhoseAcquisitionWasArchived: a prune that archived a
// running run's lock_acquired leaves no record to read; the run is then
// known by its process, which runs lockledger's executable, and a plain
// release of its holding is still refused.
func TestReleaseOfARunWhoseAcquisitionWasArchived(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	clitest.Must(t, 0, root, "init")
	_, lines := startRun(t, root, "job", "--", "sh", "-c", `echo "$LOCKLEDGER_REQUEST_ID"; exec sleep 300`)
	rid := line(t, lines)
	clitest.Must(t, 0, root, "checkpoint")
	clitest.Must(t, 0, root, "acquire", "other", "--request-id", "o1")
	clitest.Must(t, 0, root, "release", "other", "--request-id", "o1")
	arch := filepath.Join(t.TempDir(), "old.jsonl")
	clitest.Must(t, 0, root, "archive", "--before", time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "-o", arch)
	clitest.Must(t, 0, root, "prune", "--archive", arch)
	var n int
	if err := clitest.DB(t, root).QueryRow(`SELECT count(*) FROM events WHERE type = 'lock_acquired' AND request_id = ?`, rid).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the run's lock_acquired is still in the live log (%d, %v)", n, err)
	}
	r := clitest.Run(t, root, "release", "job", "--request-id", rid)
	if r.Code != 5 || !strings.Contains(r.Stderr, "lockledger run") {
		t.Fatalf("plain release of a running run whose acquisition was archived: exit %d, want 5 naming the rule\n%s", r.Code, r.Stderr)
	}
}

// TestReleaseOfAHolderThatIsNoRun: a holding that acquire took is no run,
// whatever its holder runs: here the holder is this test process, a live
// process of lockledger's own executable (the root runs the test binary as
// the CLI). Its lock_acquired records no run, and its uid releases it
// with a plain release.
func TestReleaseOfAHolderThatIsNoRun(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	clitest.Race(t, root)
	rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "job").Stdout)
	if b := lastBody(t, root, "lock_acquired"); b["run"] != nil || intField(t, b, "pid") != os.Getpid() {
		t.Fatalf("acquire's lock_acquired: %v, want no run and this process (pid %d) as its holder", b, os.Getpid())
	}
	r := clitest.Run(t, root, "release", "job", "--request-id", rid)
	if r.Code != 0 {
		t.Fatalf("plain release of a holding that is no run: exit %d, want 0\n%s", r.Code, r.Stderr)
	}
	if typ, ev := lastEvent(t, root); typ != "lock_released" || ev["forced"] != false {
		t.Fatalf("the release is recorded as %s %v, want a plain lock_released", typ, ev)
	}
}

// TestReleaseWithTheSecret: in a root two users share, alice acquires with
// a release secret; bob's release with a wrong secret is refused (exit 5
// naming the rule) and recorded as action_refused by him; with hers (from
// $LOCKLEDGER_RELEASE_SECRET, and from a file) it is accepted and recorded
// as bob's, held_by naming alice's holding and authorized_by
// release_secret. The secret itself is nowhere in the ledger's files,
// lock files or history.
func TestReleaseWithTheSecret(t *testing.T) {
	t.Parallel()
	team := newTeamRoot(t)
	root, home := team.root, team.home
	as := func(uid int, actor string, env []string, args ...string) clitest.Result {
		t.Helper()
		return team.run(asUser{uid: uid, env: append([]string{"LOCKLEDGER_ACTOR=" + actor}, env...)}, args...)
	}
	must := func(uid int, actor string, env []string, args ...string) string {
		t.Helper()
		return team.must(asUser{uid: uid, env: append([]string{"LOCKLEDGER_ACTOR=" + actor}, env...)}, args...)
	}
	num := func(m map[string]any, k string) int { t.Helper(); return intField(t, m, k) }
	var secrets []string

	// Text output: the request id, then the secret.
	out := strings.Split(must(aliceUID, "alice", nil, "--group", strconv.Itoa(teamGID), "acquire", "deploy",
		"--holder", "none", "--print-release-secret"), "\n")
	if len(out) != 2 || len(out[1]) < 22 {
		t.Fatalf("acquire --print-release-secret printed %q, want the request id and a secret", out)
	}
	rid, secret := out[0], out[1]
	secrets = append(secrets, secret)

	// No secret at all: refused, and told that a secret was made for it
	// (the refusal named only --force).
	r := as(bobUID, "bob", nil, "release", "deploy", "--request-id", rid)
	if r.Code != 5 || !strings.Contains(r.Stderr, "or with the release secret its acquirer received ($LOCKLEDGER_RELEASE_SECRET, --secret-file)") {
		t.Fatalf("bob's release without the secret: exit %d, want 5 pointing at the secret\n%s", r.Code, r.Stderr)
	}

	// A wrong secret: refused, recorded as bob's, the lock still held.
	r = as(bobUID, "bob", []string{"LOCKLEDGER_RELEASE_SECRET=" + secret + "x"}, "release", "deploy", "--request-id", rid)
	if r.Code != 5 || !strings.Contains(r.Stderr, "release secret given is not the one") {
		t.Fatalf("bob's release with a wrong secret: exit %d, want 5 naming the rule\n%s", r.Code, r.Stderr)
	}
	typ, ev := lastEvent(t, root)
	if typ != "action_refused" || ev["actor"] != "bob" || num(ev, "uid") != bobUID || ev["action"] != "release" {
		t.Fatalf("the refusal is recorded as %s %v, want action_refused by bob (uid %d)", typ, ev, bobUID)
	}
	if st := must(bobUID, "bob", nil, "status", "deploy"); !strings.Contains(st, "held") {
		t.Fatalf("the refused release freed the lock: %s", st)
	}

	// Alice's secret, from the environment: accepted, and bob's.
	must(bobUID, "bob", []string{"LOCKLEDGER_RELEASE_SECRET=" + secret}, "release", "deploy", "--request-id", rid)
	typ, ev = lastEvent(t, root)
	held, _ := ev["held_by"].(map[string]any)
	if typ != "lock_released" || ev["actor"] != "bob" || num(ev, "uid") != bobUID || ev["forced"] != false ||
		ev["authorized_by"] != "release_secret" || ev["released_request_id"] != rid || held == nil ||
		held["request_id"] != rid || held["actor"] != "alice" || num(held, "uid") != aliceUID {
		t.Fatalf("bob's release with alice's secret is recorded as %s %v, want bob's, naming alice's holding", typ, ev)
	}

	// --json carries release_secret; a secret file (0600) works the same,
	// read by bob from standard input.
	var obj map[string]any
	r = as(aliceUID, "alice", nil, "acquire", "deploy", "--holder", "none", "--print-release-secret", "--json")
	if err := json.Unmarshal([]byte(r.Stdout), &obj); err != nil || obj["release_secret"] == nil {
		t.Fatalf("acquire --print-release-secret --json: %v %s", err, r.Stdout)
	}
	secrets = append(secrets, obj["release_secret"].(string))
	must(aliceUID, "alice", nil, "release", "deploy", "--request-id", obj["request_id"].(string))
	file := filepath.Join(home, "secret")
	rid = must(aliceUID, "alice", nil, "acquire", "deploy", "--holder", "none", "--release-secret-file", file)
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("--release-secret-file: %v %v, want a file of mode 0600", fi, err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	secrets = append(secrets, strings.TrimSpace(string(b)))
	if r := as(aliceUID, "alice", nil, "acquire", "other", "--release-secret-file", file); r.Code != 2 ||
		!strings.Contains(r.Stderr, "--release-secret-file") {
		t.Fatalf("--release-secret-file over an existing file: exit %d, want 2\n%s", r.Code, r.Stderr)
	}
	if r := team.run(asUser{uid: bobUID, env: []string{"LOCKLEDGER_ACTOR=bob"}, stdin: bytes.NewReader(b)},
		"release", "deploy", "--request-id", rid, "--secret-file", "-"); r.Code != 0 {
		t.Fatalf("bob's release with the secret on stdin: exit %d\n%s", r.Code, r.Stderr)
	}
	if typ, ev := lastEvent(t, root); typ != "lock_released" || ev["actor"] != "bob" || ev["authorized_by"] != "release_secret" {
		t.Fatalf("bob's release with the secret file is recorded as %s %v", typ, ev)
	}

	// The secret is nowhere: not in the database's files, the lock files
	// or history; its SHA-256 is in lock_acquired.
	hist := must(aliceUID, "alice", nil, "history", "deploy", "--json")
	if !strings.Contains(hist, "release_secret_sha256") {
		t.Fatalf("history --json has no release_secret_sha256:\n%s", hist)
	}
	for _, s := range secrets {
		if strings.Contains(hist, s) {
			t.Fatalf("history --json shows the secret %s", s)
		}
		filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
			if err != nil || !fi.Mode().IsRegular() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte(s)) {
				t.Fatalf("%s holds the secret %s", p, s)
			}
			return nil
		})
	}
	if out := must(aliceUID, "alice", nil, "verify"); !strings.Contains(out, "verify: OK") {
		t.Fatalf("verify: %s", out)
	}
}
