package e2e

// --json is one contract: every command writes exactly one JSON document
// on stdout (JSON lines where documented) and nothing else, on success and
// on every kind of error, each kind from cli.ErrorKinds with its exit code.

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockledger/lockledger/cli"
	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/fixture"
)

// oneJSON wants stdout to be exactly one JSON document, and returns it.
func oneJSON(t *testing.T, what string, r clitest.Result) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(r.Stdout))
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: stdout is not JSON (%v): %q\nstderr: %s", what, err, r.Stdout, r.Stderr)
	}
	var more any
	if err := dec.Decode(&more); err == nil || !strings.HasSuffix(r.Stdout, "}\n") && !strings.HasSuffix(r.Stdout, "]\n") {
		t.Fatalf("%s: stdout holds more than one JSON document: %q", what, r.Stdout)
	}
	return v
}

// errorKind wants stdout to be one error object of kind with the kind's
// exit code from cli.ErrorKinds.
func errorKind(t *testing.T, what, kind string, r clitest.Result) map[string]any {
	t.Helper()
	obj, ok := oneJSON(t, what, r).(map[string]any)
	if !ok || obj["error"] != kind {
		t.Fatalf("%s: error %v, want %s\nstdout: %s", what, obj["error"], kind, r.Stdout)
	}
	for _, k := range cli.ErrorKinds {
		if k.Kind != kind {
			continue
		}
		if want := strings.Fields(k.Exit)[0]; !strings.Contains(want, "N") && strconv.Itoa(r.Code) != want {
			t.Errorf("%s: %s exits %d, the table says %s", what, kind, r.Code, k.Exit)
		}
		return obj
	}
	t.Fatalf("%s: kind %s is not in cli.ErrorKinds", what, kind)
	return nil
}

func TestJSONOnSuccessIsOneDocument(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	key := filepath.Join(t.TempDir(), "signing.key")
	cases := [][]string{
		{"init"},
		{"acquire", "a", "--pid", self, "--request-id", "req_json1"},
		{"heartbeat", "a", "--request-id", "req_json1"},
		{"status", "a"},
		{"status", "free-one"},
		{"list"},
		{"who", "a"},
		{"replay"},
		{"steal", "a", "--active", "--yes", "--reason", "json test", "--pid", self, "--request-id", "req_json2"},
		{"release", "a", "--request-id", "req_json2"},
		{"release", "a", "--request-id", "req_json2"}, // not held: nothing to release
		{"history", "a"},
		{"timeline"},
		{"verify"},
		{"project"},
		{"version"},
		{"trust", "show"},
		{"keygen", "--name", "ops", "-o", key},
		{"checkpoint", "--signing-key", key},
		{"run", "b", "--", "true"},
	}
	for _, args := range cases {
		r := clitest.Must(t, 0, root, append([]string{"--json"}, args...)...)
		oneJSON(t, strings.Join(args, " "), r)
	}
	// export is JSON lines, as documented.
	r := clitest.Must(t, 0, root, "export", "--json")
	for i, line := range strings.Split(strings.TrimSuffix(r.Stdout, "\n"), "\n") {
		if !json.Valid([]byte(line)) {
			t.Fatalf("export --json line %d is not JSON: %q", i+1, line)
		}
	}
}

func TestJSONErrorKinds(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	clitest.Must(t, 0, root, "acquire", "held", "--pid", self, "--request-id", "req_holder", "--ttl", "1h")

	cases := []struct {
		kind string
		args []string
	}{
		{cli.KindInvalidInput, []string{"acquire", "Bad"}},
		{cli.KindInvalidInput, []string{"status", "--no-such-flag"}}, // was "usage"
		{cli.KindInvalidInput, []string{"status", "a", "b"}},         // was "usage"
		{cli.KindInvalidInput, []string{"no-such-command"}},          // was "usage"
		{cli.KindInvalidInput, []string{"run", "job"}},               // was "usage"
		{cli.KindInvalidInput, []string{"release", "held", "--exit-code", "300", "--request-id", "req_holder"}},
		{cli.KindInvalidInput, []string{"timeline", "--format", "table"}}, // --json contradicts it
		{cli.KindInvalidInput, []string{"metrics"}},                       // no JSON form
		{cli.KindLockBlocked, []string{"acquire", "held"}},
		{cli.KindNotHolder, []string{"release", "held", "--request-id", "req_nope"}},
		{cli.KindNotHolder, []string{"heartbeat", "held", "--request-id", "req_nope"}},
		{cli.KindCommandNotFound, []string{"run", "job", "--", "no-such-command-anywhere"}},
		{cli.KindCannotExecute, []string{"run", "job", "--", t.TempDir()}},
		{cli.KindNoLedger, []string{"status", "held", "--root", filepath.Join(t.TempDir(), "none")}},
		{cli.KindNoLedger, []string{"timeline", "--root", filepath.Join(t.TempDir(), "none")}},
	}
	for _, tc := range cases {
		before := clitest.EventCount(t, root)
		r := clitest.Run(t, root, append([]string{"--json"}, tc.args...)...)
		obj := errorKind(t, strings.Join(tc.args, " "), tc.kind, r)
		if obj["message"] == nil || obj["message"] == "" {
			t.Errorf("%v: no message: %v", tc.args, obj)
		}
		if tc.kind == cli.KindInvalidInput {
			if after := clitest.EventCount(t, root); after != before {
				t.Errorf("%v: invalid input wrote %d events", tc.args, after-before)
			}
		}
	}

	// lock_lost: a request whose lock was taken over.
	clitest.Must(t, 0, root, "acquire", "lost", "--pid", self, "--request-id", "req_lost")
	clitest.Must(t, 0, root, "steal", "lost", "--active", "--yes", "--reason", "take it", "--pid", self)
	errorKind(t, "release lost", cli.KindLockLost, clitest.Run(t, root, "release", "lost", "--request-id", "req_lost", "--json"))

	// lock_stale: a holder past its TTL.
	clitest.Must(t, 0, root, "acquire", "stale", "--pid", self, "--ttl", "1")
	awaitState(t, root, "stale", "stale", 10*time.Second)
	errorKind(t, "acquire stale", cli.KindLockStale, clitest.Run(t, root, "acquire", "stale", "--json"))

	// failure: a root whose ledger.db is another application's database.
	other := t.TempDir()
	db, err := sql.Open("sqlite", filepath.Join(other, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE photos (id INTEGER)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	errorKind(t, "status of another application's database", cli.KindFailure, clitest.Run(t, other, "status", "x", "--json"))

	// broken_chain: an event rewritten behind the ledger's back.
	broken := t.TempDir()
	clitest.Unsigned(t, broken)
	clitest.Must(t, 0, broken, "acquire", "x", "--pid", self, "--request-id", "req_b1")
	clitest.Must(t, 0, broken, "release", "x", "--request-id", "req_b1")
	db = fixture.RawDB(t, broken)
	for _, q := range []string{`DROP TRIGGER events_no_update`,
		`UPDATE events SET body = replace(body, '"actor":"tester"', '"actor":"mallory"') WHERE seq = 1`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	errorKind(t, "project of a broken chain", cli.KindBrokenChain, clitest.Run(t, broken, "project", "--json"))
}

// A wait given up on SIGINT answers with one interrupted object naming
// what it gave up.
func TestJSONInterrupted(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	startHolder(t, root, "deploy")
	c := clitest.Command(context.Background(), root, "acquire", "deploy", "--wait", "10m", "--json")
	var stdout bytes.Buffer
	c.Stdout = &stdout
	lines := startWaiter(t, c)
	if err := c.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for lines.Scan() {
	}
	code := exitOf(t, c)
	obj := errorKind(t, "acquire --wait, SIGINT", cli.KindInterrupted, clitest.Result{Code: code, Stdout: stdout.String()})
	if code != 130 || obj["signal"] != "SIGINT" {
		t.Fatalf("exit %d, %v; want 130 and signal SIGINT", code, obj)
	}
	if cause, _ := obj["cause"].(map[string]any); cause["error"] != cli.KindLockBlocked {
		t.Errorf("cause %v, want a lock_blocked object", obj["cause"])
	}
}

func TestTimelineJSONIsFormatJSON(t *testing.T) {
	t.Parallel()
	root := outputRoot(t)
	for _, args := range [][]string{{"timeline"}, {"history", "a"}, {"timeline", "--lock", "a", "--type", "lock_released"}} {
		j := clitest.Must(t, 0, root, append(args, "--json")...).Stdout
		f := clitest.Must(t, 0, root, append(args, "--format", "json")...).Stdout
		if j != f {
			t.Errorf("%v: --json and --format json differ:\n%s\n---\n%s", args, j, f)
		}
		if _, ok := oneJSON(t, strings.Join(args, " "), clitest.Result{Stdout: j}).([]any); !ok {
			t.Errorf("%v --json is not an array: %s", args, j)
		}
	}
	// --json --format jsonl stays JSON lines.
	r := clitest.Must(t, 0, root, "timeline", "--json", "--format", "jsonl")
	if n := strings.Count(r.Stdout, "\n"); n != clitest.EventCount(t, root) {
		t.Errorf("timeline --json --format jsonl: %d lines, want one per event", n)
	}
}

// --json with a format that is not JSON is refused, naming --format, and
// records nothing (export records what it exported).
func TestExportJSONRefusesAFormatThatIsNotJSON(t *testing.T) {
	t.Parallel()
	root := outputRoot(t)
	before := snapLedger(t, root)
	for _, args := range [][]string{{"export", "--json", "--format", "csv"}, {"export", "--json", "--follow", "--format", "syslog"}} {
		r := clitest.Run(t, root, args...)
		e, _ := oneJSON(t, strings.Join(args, " "), r).(map[string]any)
		if r.Code != 2 || e["error"] != "invalid_input" || e["field"] != "--format" || e["value"] != args[len(args)-1] {
			t.Errorf("%v: exit %d, want 2 and an invalid_input error naming --format\nstdout: %s\nstderr: %s", args, r.Code, r.Stdout, r.Stderr)
		}
	}
	if after := snapLedger(t, root); after != before {
		t.Errorf("a refused export changed the ledger: %v -> %v", before, after)
	}
	if r := clitest.Must(t, 0, root, "export", "--json", "--format", "jsonl"); !json.Valid([]byte(strings.SplitN(r.Stdout, "\n", 2)[0])) {
		t.Errorf("export --json --format jsonl is not JSON lines: %s", r.Stdout)
	}
}

// status objects say the lock's state and not also "status": "ok".
func TestStatusJSONHasStateOnly(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	clitest.Must(t, 0, root, "acquire", "a", "--pid", strconv.Itoa(os.Getpid()))
	st := statusJSON(t, root, "a")
	if _, has := st["status"]; has || st["state"] != "held" {
		t.Errorf("status --json: %v, want state held and no status", st)
	}
	list, _ := oneJSON(t, "list", clitest.Must(t, 0, root, "list", "--json")).([]any)
	if len(list) != 1 || list[0].(map[string]any)["status"] != nil {
		t.Errorf("list --json: %v, want one object without status", list)
	}
}

// release --json: stdout holds the object and nothing else, whatever the
// outcome; the log goes to stderr.
func TestReleaseJSONKeepsStdoutPure(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	clitest.Must(t, 0, root, "acquire", "a", "--pid", self, "--request-id", "req_r1")
	for _, tc := range []struct {
		args   []string
		code   int
		status string
	}{
		{[]string{"release", "a", "--request-id", "req_r1", "--exit-code", "3"}, 0, "released"},
		{[]string{"release", "a", "--request-id", "req_r1"}, 0, "not_held"},
		{[]string{"release", "a", "--force", "--yes", "--reason", "cleanup"}, 0, "not_held"},
	} {
		r := clitest.Must(t, tc.code, root, append(tc.args, "--json")...)
		obj, _ := oneJSON(t, strings.Join(tc.args, " "), r).(map[string]any)
		if obj["status"] != tc.status {
			t.Errorf("%v: %v, want status %s", tc.args, obj, tc.status)
		}
		// The released holding's token, as acquire --json and run --json say it.
		if _, has := obj["fencing_token"]; has != (tc.status == "released") || has && obj["fencing_token"] != 1.0 {
			t.Errorf("%v: fencing_token %v, want 1 on a release and none on not_held", tc.args, obj["fencing_token"])
		}
		if !strings.Contains(r.Stderr, "release") && !strings.Contains(r.Stderr, "nothing to release") {
			t.Errorf("%v: the log line is not on stderr: %q", tc.args, r.Stderr)
		}
	}
	acq, _ := oneJSON(t, "acquire", clitest.Must(t, 0, root, "acquire", "a", "--pid", self, "--request-id", "req_r2", "--json")).(map[string]any)
	r := clitest.Must(t, 0, root, "release", "a", "--force", "--yes", "--reason", "INC-1", "--json")
	if obj, _ := oneJSON(t, "release --force", r).(map[string]any); obj["forced"] != true || obj["released_request_id"] != "req_r2" ||
		obj["fencing_token"] == nil || obj["fencing_token"] != acq["fencing_token"] {
		t.Errorf("release --force --json: %v", obj)
	}
}

// run --json: the command's output passes through; run's object is the
// last line of stdout, after it.
func TestRunJSON(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	r := clitest.Must(t, 0, root, "run", "job", "--json", "--", "true")
	obj, _ := oneJSON(t, "run true", r).(map[string]any)
	for k, want := range map[string]any{"status": "released", "lock_name": "job", "result": "success",
		"command_exit_code": 0.0, "exit_code": 0.0} {
		if obj[k] != want {
			t.Errorf("run --json: %s = %v, want %v (%v)", k, obj[k], want, obj)
		}
	}
	if rid, _ := obj["request_id"].(string); !strings.HasPrefix(rid, "req_") || obj["fencing_token"] != 1.0 {
		t.Errorf("run --json: request id and fencing token: %v", obj)
	}
	for _, k := range []string{"waited_seconds", "duration_seconds"} {
		if v, ok := obj[k].(float64); !ok || v < 0 {
			t.Errorf("run --json: %s = %v", k, obj[k])
		}
	}
	if last := clitest.Strings(t, root, `SELECT json_extract(body, '$.request_id') FROM events WHERE type = 'lock_released'`); len(last) != 1 || last[0] != obj["request_id"] {
		t.Errorf("the released request %v is not the object's %v", last, obj["request_id"])
	}

	// The command's stdout first, untouched; the object last; its code is run's.
	r = clitest.Must(t, 7, root, "run", "job", "--json", "-c", "echo out; echo --json; echo err >&2; exit 7")
	out, objLine, _ := strings.Cut(r.Stdout, "out\n--json\n")
	if out != "" || strings.Count(objLine, "\n") != 1 {
		t.Fatalf("run --json with output: stdout %q, want the command's lines then one object", r.Stdout)
	}
	obj, _ = oneJSON(t, "run exit 7", clitest.Result{Stdout: objLine}).(map[string]any)
	if obj["status"] != "released" || obj["result"] != "failure" || obj["command_exit_code"] != 7.0 || obj["exit_code"] != 7.0 {
		t.Errorf("run --json exit 7: %v", obj)
	}
	if !strings.Contains(r.Stderr, "err\n") {
		t.Errorf("the command's stderr did not pass through: %q", r.Stderr)
	}

	// Blocked: the error object, and the command never ran.
	clitest.Must(t, 0, root, "acquire", "held", "--pid", strconv.Itoa(os.Getpid()))
	marker := filepath.Join(t.TempDir(), "ran")
	errorKind(t, "run on a held lock", cli.KindLockBlocked, clitest.Run(t, root, "run", "held", "--json", "--", "touch", marker))
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran without the lock")
	}
}

// --jq EXPR: --json filtered through a jq expression, strings raw, as gh's
// --jq; on an error object too; a bad expression is invalid input.
func TestJQ(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	r := clitest.Must(t, 0, root, "acquire", "a", "--pid", self, "--jq", ".request_id")
	rid := strings.TrimSuffix(r.Stdout, "\n")
	if !strings.HasPrefix(rid, "req_") || strings.Contains(rid, `"`) {
		t.Fatalf("acquire --jq .request_id: %q, want the bare request id", r.Stdout)
	}
	if r := clitest.Must(t, 0, root, "status", "a", "--jq", ".lock.request_id == \""+rid+"\", .fencing_token"); r.Stdout != "true\n1\n" {
		t.Errorf("status --jq: %q", r.Stdout)
	}
	if r := clitest.Must(t, 3, root, "acquire", "a", "--jq", ".error"); r.Stdout != "lock_blocked\n" {
		t.Errorf("acquire of a held lock --jq .error: %q", r.Stdout)
	}
	if r := clitest.Must(t, 0, root, "timeline", "--jq", "map(.type) | join(\",\")"); r.Stdout != "lock_acquired,acquire_blocked\n" {
		t.Errorf("timeline --jq: %q", r.Stdout)
	}
	if r := clitest.Must(t, 0, root, "run", "b", "--jq", ".status", "-c", "echo from-cmd"); r.Stdout != "from-cmd\nreleased\n" {
		t.Errorf("run --jq: %q, want the command's line then the filtered object", r.Stdout)
	}
	// An expression that fails on what a successful acquire wrote: the
	// lock is held, and stderr says so with the request id to release it.
	r = clitest.Run(t, root, "acquire", "d", "--pid", self, "--jq", `error("no")`)
	st := statusJSON(t, root, "d")
	held, _ := st["lock"].(map[string]any)
	if r.Code != 1 || held == nil || !strings.Contains(r.Stderr, "the command itself succeeded") || !strings.Contains(r.Stderr, held["request_id"].(string)) {
		t.Errorf("acquire --jq failing at run time: exit %d, status %v\nstderr: %s", r.Code, st, r.Stderr)
	}
	n := clitest.EventCount(t, root)
	r = clitest.Run(t, root, "acquire", "c", "--jq", ".[")
	if obj := errorKind(t, "--jq .[", cli.KindInvalidInput, r); obj["field"] != "--jq" {
		t.Errorf("a bad --jq expression: %v", obj)
	}
	if clitest.EventCount(t, root) != n {
		t.Error("a bad --jq expression wrote events")
	}
}
