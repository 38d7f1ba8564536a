package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/clitest"
)

func TestVersionNamesTheGoToolchain(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	r := clitest.Must(t, 0, root, "--version")
	if !strings.HasPrefix(r.Stdout, "lockledger ") || !strings.Contains(r.Stdout, runtime.Version()) || !strings.Contains(r.Stdout, "commit") {
		t.Fatalf("--version: %q", r.Stdout)
	}
	if v := clitest.Must(t, 0, root, "version"); v.Stdout != r.Stdout {
		t.Fatalf("version %q differs from --version %q", v.Stdout, r.Stdout)
	}
	var b struct {
		Version, Go, Platform string
		Modified              *bool
	}
	if err := json.Unmarshal([]byte(clitest.Must(t, 0, root, "version", "--json").Stdout), &b); err != nil {
		t.Fatal(err)
	}
	if b.Version == "" || b.Go != runtime.Version() || b.Platform != runtime.GOOS+"/"+runtime.GOARCH || b.Modified == nil {
		t.Fatalf("version --json: %+v", b)
	}
	if _, err := os.Stat(filepath.Join(root, "ledger.db")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("version touched the root: %v", err)
	}
}

func TestQuietLogLevelFromEnvAndJSONErrors(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	if r := clitest.Must(t, 0, root, "acquire", "a", "--pid", self); r.Stderr == "" {
		t.Fatal("acquire logged nothing at the default level: the quiet checks below would prove nothing")
	}
	if r := clitest.Must(t, 0, root, "-q", "acquire", "b", "--pid", self); r.Stderr != "" || r.Stdout == "" {
		t.Fatalf("-q: stdout %q, stderr %q", r.Stdout, r.Stderr)
	}
	if r := clitest.RunWith(t, root, []string{"LOCKLEDGER_LOG_LEVEL=error"}, "", "acquire", "c", "--pid", self); r.Code != 0 || r.Stderr != "" {
		t.Fatalf("LOCKLEDGER_LOG_LEVEL=error: exit %d, stderr %q", r.Code, r.Stderr)
	}
	// The flag wins over the environment.
	if r := clitest.RunWith(t, root, []string{"LOCKLEDGER_LOG_LEVEL=error"}, "", "acquire", "d", "--pid", self, "--log-level", "info"); r.Code != 0 || r.Stderr == "" {
		t.Fatalf("--log-level info over LOCKLEDGER_LOG_LEVEL=error: exit %d, stderr %q", r.Code, r.Stderr)
	}
	r := clitest.RunWith(t, root, []string{"LOCKLEDGER_LOG_LEVEL=loud"}, "", "status", "a")
	if r.Code != 2 || !strings.Contains(r.Stderr, "LOCKLEDGER_LOG_LEVEL") {
		t.Fatalf("bad LOCKLEDGER_LOG_LEVEL: exit %d, %q", r.Code, r.Stderr)
	}
	// Errors stay visible under -q, and follow --log-format json.
	r = clitest.Run(t, root, "-q", "--log-format", "json", "release", "a", "--request-id", "req_nope")
	if r.Code != 5 {
		t.Fatalf("release by a stranger: exit %d\n%s", r.Code, r.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
	var last map[string]any
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &last) != nil {
		t.Fatalf("stderr is not one JSON object: %q", r.Stderr)
	}
	if last["level"] != "ERROR" || last["exit_code"] != float64(5) || last["error"] != "not_holder" ||
		!strings.Contains(last["msg"].(string), "req_nope") {
		t.Fatalf("JSON error: %v", last)
	}
	r = clitest.Run(t, root, "--log-format", "json", "status", "Not A Name")
	if r.Code != 2 || json.Unmarshal([]byte(r.Stderr), &last) != nil || last["field"] != "lock name" {
		t.Fatalf("invalid input with --log-format json: exit %d, %q", r.Code, r.Stderr)
	}
}

func TestDemoWritesNoEscapeCodesWhenPipedOrWithNoColor(t *testing.T) {
	t.Parallel()
	clitest.NeedBinary(t, "bash", "jq", "script")
	demo, err := filepath.Abs("../scripts/demo.sh")
	if err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		c := exec.CommandContext(ctx, name, args...)
		// clitest.Env sets NO_COLOR; each case here says whether it has it.
		c.Env = slices.DeleteFunc(clitest.Env(t.TempDir(), "TMPDIR="+t.TempDir()), func(kv string) bool {
			return strings.HasPrefix(kv, "NO_COLOR=")
		})
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		if !strings.Contains(string(out), "demo root was") {
			t.Fatalf("%s: the demo did not finish:\n%s", name, out)
		}
		return string(out)
	}
	if out := run("bash", demo, clitest.Bin()); strings.Contains(out, "\x1b") {
		t.Fatalf("escape codes in piped demo output:\n%q", out)
	}
	// On a terminal (script gives it one) the demo has colour, and NO_COLOR
	// alone keeps it out.
	cmd := "bash " + demo + " " + clitest.Bin()
	if out := run("script", "-qec", cmd, "/dev/null"); !strings.Contains(out, "\x1b[1m") {
		t.Fatalf("no bold step titles on a terminal: the checks here could not see escape codes:\n%q", out)
	}
	if out := run("script", "-qec", "NO_COLOR=1 "+cmd, "/dev/null"); strings.Contains(out, "\x1b") {
		t.Fatalf("escape codes with NO_COLOR on a terminal:\n%q", out)
	}
}

func TestStatusCheckAndARootWithNothingRecorded(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "fresh")
	// Nothing recorded is not free: exit 6, no ledger, nothing created.
	r := clitest.Must(t, 6, root, "status", "deploy")
	if r.Stdout != "" || !strings.Contains(r.Stderr, "no ledger at") {
		t.Fatalf("status on a fresh root: %q %q", r.Stdout, r.Stderr)
	}
	if r := clitest.Must(t, 6, root, "status", "deploy", "--check"); r.Stdout != "" {
		t.Fatalf("--check printed %q", r.Stdout)
	}
	if o := jsonOut(t, clitest.Must(t, 6, root, "status", "deploy", "--check", "--json")); o["error"] != "no_ledger" {
		t.Fatalf("--check --json: %v", o)
	}
	if o := jsonOut(t, clitest.Must(t, 6, root, "list", "--json")); o["error"] != "no_ledger" {
		t.Fatalf("list on a fresh root: %v", o)
	}
	if _, err := os.Lstat(root); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("reading a fresh root created it: %v", err)
	}
	clitest.Must(t, 0, root, "init")
	if r := clitest.Must(t, 0, root, "status", "deploy"); r.Stdout != "deploy: free\n" {
		t.Fatalf("status on a fresh ledger: %q", r.Stdout)
	}
	if r := clitest.Must(t, 0, root, "status", "deploy", "--check"); r.Stdout != "" {
		t.Fatalf("--check printed %q", r.Stdout)
	}
	if r := clitest.Must(t, 0, root, "list", "--json"); strings.TrimSpace(r.Stdout) != "[]" {
		t.Fatalf("list on a fresh ledger: %q", r.Stdout)
	}

	self := strconv.Itoa(os.Getpid())
	clitest.Must(t, 0, root, "acquire", "deploy", "--pid", self)
	if r := clitest.Must(t, 3, root, "status", "deploy", "--check"); r.Stdout != "" || r.Stderr != "" {
		t.Fatalf("--check on a held lock printed %q %q", r.Stdout, r.Stderr)
	}
	if o := jsonOut(t, clitest.Must(t, 3, root, "status", "deploy", "--check", "--json")); o["state"] != "held" {
		t.Fatalf("--check --json on a held lock: %v", o)
	}
	// Another tool's lock whose heartbeat stopped two minutes ago, ttl 60 s.
	now := time.Now()
	rec := events.Record{LockVersion: "v1", LockName: "migrate", RequestID: "req_old", Actor: "nightly", HostID: "runner-7",
		PID: 4242, CreatedAt: events.FormatLockTime(now.Add(-3 * time.Minute)),
		LastHeartbeatAt: events.FormatLockTime(now.Add(-2 * time.Minute)), TTLSeconds: 60, Metadata: map[string]string{}}
	if err := os.WriteFile(filepath.Join(root, "locks", "migrate.lock"), rec.File(), 0o600); err != nil {
		t.Fatal(err)
	}
	clitest.Must(t, 4, root, "status", "migrate", "--check")
	clitest.Must(t, 0, root, "status", "other", "--check")
	clitest.Must(t, 2, root, "status", "deploy", "--check", "--format", "bso")

	// With no ledger, another tool's lock file is not reported free.
	bare := t.TempDir()
	if err := os.MkdirAll(filepath.Join(bare, "locks"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bare, "locks", "migrate.lock"), rec.File(), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := clitest.Run(t, bare, "status", "migrate", "--check"); r.Code == 0 {
		t.Fatalf("a foreign lock file in a root with no ledger reported free")
	}
	if r := clitest.Run(t, bare, "list"); r.Code == 0 {
		t.Fatalf("list of a root with no ledger but a foreign lock file reported nothing held")
	}
}

func TestForcedReleaseReasonAndCompareAndRelease(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	holder := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "deploy", "--pid", self, "--request-id", "req-holder").Stdout)

	// Naming a request that does not hold the lock: refused, recorded, lock kept.
	n := clitest.EventCount(t, root)
	r := clitest.Must(t, 5, root, "release", "deploy", "--force", "--yes", "--reason", "cleanup", "--request-id", "req-stale-view", "--actor", "oncall")
	if !strings.Contains(r.Stderr, holder) {
		t.Fatalf("refusal does not name the holder %s: %q", holder, r.Stderr)
	}
	if got := clitest.Types(t, root)[n:]; len(got) != 1 || got[0] != "action_refused" {
		t.Fatalf("refused compare-and-release recorded %v", got)
	}
	clitest.Must(t, 3, root, "status", "deploy", "--check")

	r = clitest.Must(t, 2, root, "release", "deploy", "--request-id", holder, "--reason", "why")
	if !strings.Contains(r.Stderr, "--reason") {
		t.Fatalf("--reason without --force: %q", r.Stderr)
	}
	clitest.Must(t, 0, root, "release", "deploy", "--force", "--yes", "--request-id", holder, "--actor", "oncall", "--reason", "INC-7: runner gone")
	rel := lastBody(t, root, "lock_released")
	if rel["forced"] != true || rel["released_request_id"] != holder || rel["actor"] != "oncall" || rel["note"] != "INC-7: runner gone" {
		t.Fatalf("compare-and-release: %v", rel)
	}
	clitest.Must(t, 0, root, "status", "deploy", "--check")
	// The holder itself learns that it lost the lock.
	clitest.Must(t, 5, root, "release", "deploy", "--request-id", holder)
	// Free: nothing to release.
	clitest.Must(t, 0, root, "release", "deploy", "--force", "--yes", "--reason", "cleanup", "--request-id", holder)

	// A plain --force (anyone's lock) keeps its reason too.
	clitest.Must(t, 0, root, "acquire", "deploy", "--pid", self, "--request-id", "req-second")
	clitest.Must(t, 0, root, "release", "deploy", "--force", "--yes", "--reason", "cleanup")
	if rel := lastBody(t, root, "lock_released"); rel["note"] != "cleanup" || rel["released_request_id"] != "req-second" {
		t.Fatalf("forced release: %v", rel)
	}

	// A steal that finds the lock free keeps the operator's reason.
	clitest.Must(t, 0, root, "steal", "idle", "--reason", "taking it for the migration", "--pid", self)
	if acq := lastBody(t, root, "lock_acquired"); acq["lock_name"] != "idle" || acq["note"] != "taking it for the migration" {
		t.Fatalf("steal of a free lock: %v", acq)
	}
	if h := clitest.Must(t, 0, root, "history", "idle").Stdout; !strings.Contains(h, `note "taking it for the migration"`) {
		t.Fatalf("history does not show the note:\n%s", h)
	}
	clitest.Must(t, 0, root, "verify")
}
