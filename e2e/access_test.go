package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/fixture"
)

// accessEvent is a ledger-wide event as stored: its body's fields and its
// lock_name column.
type accessEvent struct {
	Seq          int64   `json:"seq"`
	Type         string  `json:"type"`
	LockName     *string `json:"lock_name"`
	Actor        string  `json:"actor"`
	UID          *int    `json:"uid"`
	User         *string `json:"user"`
	Since        string  `json:"since"`
	Until        string  `json:"until"`
	FirstSeq     int64   `json:"first_seq"`
	LastSeq      int64   `json:"last_seq"`
	Events       int64   `json:"events"`
	Format       string  `json:"format"`
	Destination  string  `json:"destination"`
	Result       string  `json:"result"`
	Problems     int     `json:"problems"`
	FirstBadSeq  int64   `json:"first_bad_seq"`
	HeadHash     string  `json:"head_hash"`
	File         string  `json:"file"`
	Locks        int     `json:"locks"`
	RowsChanged  int     `json:"rows_changed"`
	FilesChanged int     `json:"files_changed"`

	column string // the lock_name column
}

// lastAccess is the last event, which must be a ledger-wide one by this
// process's user, with no lock_name in the body and "" in the column.
func lastAccess(t *testing.T, root string, typ events.Type) accessEvent {
	t.Helper()
	var body []byte
	var e accessEvent
	if err := clitest.DB(t, root).QueryRow(`SELECT body, lock_name FROM events ORDER BY seq DESC LIMIT 1`).Scan(&body, &e.column); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatal(err)
	}
	if e.Type != string(typ) {
		t.Fatalf("last event %s, want %s: %s", e.Type, typ, body)
	}
	if e.LockName != nil || e.column != "" {
		t.Fatalf("%s names a lock (body %v, column %q): %s", typ, e.LockName, e.column, body)
	}
	if e.UID == nil || *e.UID != os.Getuid() || e.User == nil || *e.User != userName(os.Getuid()) {
		t.Fatalf("%s by uid %v user %v, want uid %d: %s", typ, e.UID, e.User, os.Getuid(), body)
	}
	return e
}

// lockEventCount counts the events about locks: all but the ledger-wide
// ones (whose lock_name column is "") that reads of the log record.
func lockEventCount(t *testing.T, root string) string {
	t.Helper()
	return clitest.Strings(t, root, `SELECT count(*) FROM events WHERE lock_name <> ''`)[0]
}

// accessLedger is a root with five lock events at known times.
func accessLedger(t *testing.T) (root string, at []string) {
	t.Helper()
	root = filepath.Join(t.TempDir(), "r")
	self := strconv.Itoa(os.Getpid())
	rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "a", "--pid", self).Stdout)
	clitest.Must(t, 0, root, "heartbeat", "a", "--request-id", rid)
	clitest.Must(t, 0, root, "release", "a", "--request-id", rid)
	clitest.Must(t, 0, root, "acquire", "b", "--pid", self)
	clitest.Must(t, 3, root, "acquire", "b", "--pid", self)
	return root, clitest.Strings(t, root, `SELECT at FROM events ORDER BY seq`)
}

// TestExportIsRecorded: every export appends a ledger_exported after the
// events it wrote (never among them), saying the range asked for and
// written, the count, the format, where it went and who ran it; it makes
// no lock.
func TestExportIsRecorded(t *testing.T) {
	t.Parallel()
	root, at := accessLedger(t)
	file := filepath.Join(t.TempDir(), "slice.csv")
	clitest.Must(t, 0, root, "export", "--since", at[1], "--until", at[3], "--format", "csv", "-o", file, "--actor", "auditor")
	e := lastAccess(t, root, events.LedgerExported)
	since, _ := time.Parse(time.RFC3339Nano, at[1])
	until, _ := time.Parse(time.RFC3339Nano, at[3])
	if e.Seq != 6 || e.Since != events.FormatTime(since) || e.Until != events.FormatTime(until) || e.FirstSeq != 2 ||
		e.LastSeq != 4 || e.Events != 3 || e.Format != "csv" || e.Destination != file || e.Actor != "auditor" {
		t.Fatalf("ledger_exported of a slice to a file: %+v", e)
	}

	out := clitest.Must(t, 0, root, "export", "--checkpoints=false").Stdout
	e = lastAccess(t, root, events.LedgerExported)
	if e.Seq != 7 || e.Since != "" || e.Until != "" || e.FirstSeq != 1 || e.LastSeq != 6 || e.Events != 6 ||
		e.Format != "jsonl" || e.Destination != "stdout" || e.Actor != "tester" {
		t.Fatalf("ledger_exported of everything to stdout: %+v", e)
	}
	// The export holds the events before its own record: seq 1-6.
	if n := strings.Count(out, "\n"); n != 6 || !strings.Contains(out, `"type":"ledger_exported"`) || strings.Contains(out, `"seq":7,`) {
		t.Fatalf("export of 6 events:\n%s", out)
	}

	clitest.Must(t, 0, root, "export", "--since", "2099-01-01T00:00:00Z")
	if e = lastAccess(t, root, events.LedgerExported); e.Events != 0 || e.FirstSeq != 0 || e.LastSeq != 0 {
		t.Fatalf("ledger_exported of nothing: %+v", e)
	}
	// The recorded reads are no lock: list, replay and verify see a and b.
	var listed []map[string]any
	if err := json.Unmarshal([]byte(clitest.Must(t, 0, root, "list", "--json").Stdout), &listed); err != nil || len(listed) != 1 {
		t.Fatalf("list after recorded exports: %v %v", listed, err)
	}
	var rep struct {
		Locks []struct {
			Name string `json:"lock_name"`
		} `json:"locks"`
	}
	if err := json.Unmarshal([]byte(clitest.Must(t, 0, root, "replay", "--json").Stdout), &rep); err != nil || len(rep.Locks) != 2 {
		t.Fatalf("replay after recorded exports: %+v %v", rep, err)
	}
	clitest.Must(t, 0, root, "verify")
	if tl := clitest.Must(t, 0, root, "timeline", "--type", "ledger_exported", "--wide").Stdout; strings.Count(tl, "(ledger)") != 3 ||
		!strings.Contains(tl, "exported 3 events (seq 2-4)") || !strings.Contains(tl, "as csv to "+file) {
		t.Fatalf("timeline of the exports:\n%s", tl)
	}
	if h := clitest.Must(t, 0, root, "history", "a").Stdout; strings.Contains(h, "ledger_") {
		t.Fatalf("history of a lock shows the ledger-wide events:\n%s", h)
	}
}

// TestVerifyIsRecorded: verify reports the log as it read it, then
// appends a ledger_verified with the result, the problem count, the first
// bad seq, and the events and head hash it checked; the next verify sees
// one more event, and finds it sound. A check of an export file is the
// auditor's, on its own: it records nothing.
func TestVerifyIsRecorded(t *testing.T) {
	t.Parallel()
	root, _ := accessLedger(t)
	v := clitest.Verify(t, 0, root)
	e := lastAccess(t, root, events.LedgerVerified)
	if !v.OK || v.Events != 5 || v.LastSeq != 5 || v.Recorded != 6 {
		t.Fatalf("verify: %+v, want 5 events checked and its record at seq 6", v)
	}
	if e.Seq != 6 || e.Result != "ok" || e.Events != 5 || e.Problems != 0 || e.FirstBadSeq != 0 || e.FirstSeq != 1 ||
		e.LastSeq != 5 || e.HeadHash != v.HeadHash || e.File != "" || e.Actor != "tester" {
		t.Fatalf("ledger_verified: %+v (report %+v)", e, v)
	}
	plain := clitest.Must(t, 0, root, "verify", "--full").Stdout
	if !strings.Contains(plain, " 6 (seq 1-6)") || !strings.Contains(plain, "recorded: ledger_verified, seq 7") {
		t.Fatalf("the next verify:\n%s", plain)
	}

	file := filepath.Join(t.TempDir(), "audit.jsonl")
	clitest.Must(t, 0, root, "export", "-o", file)
	if fv := clitest.Verify(t, 0, root, "--file", file, "--actor", "auditor"); !fv.OK || fv.Recorded != 0 || fv.Events != 7 {
		t.Fatalf("verify --file: %+v, want the export's 7 events checked and nothing recorded", fv)
	}
	if n := clitest.Strings(t, root, "SELECT count(*) FROM events"); n[0] != "8" {
		t.Fatalf("verify --file appended to the ledger at --root: %s events, want 8 (the export's record the last)", n[0])
	}

	// Damage: the record says failed, with the first bad seq.
	db := fixture.RawDB(t, root)
	for _, q := range []string{`DROP TRIGGER events_no_update`,
		`UPDATE events SET body = replace(body, '"actor":"tester"', '"actor":"mallory"') WHERE seq = 2`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	v = clitest.Verify(t, 1, root, "--full") // below the head the verifies above kept
	e = lastAccess(t, root, events.LedgerVerified)
	if v.OK || v.FirstBad == nil || v.FirstBad.Seq != 2 || e.Result != "failed" || e.Problems != v.ProblemCount ||
		e.FirstBadSeq != 2 || e.Seq != v.Recorded {
		t.Fatalf("ledger_verified of a damaged ledger: %+v (report %+v)", e, v)
	}
}

// TestVerifyFileWithoutALedgerRecordsNothing: verify --file needs no
// root; where there is no ledger it checks the file and creates nothing.
func TestVerifyFileWithoutALedgerRecordsNothing(t *testing.T) {
	t.Parallel()
	root, _ := accessLedger(t)
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	clitest.Must(t, 0, root, "export", "-o", file)
	none := filepath.Join(t.TempDir(), "none")
	r := clitest.Must(t, 0, none, "verify", "--file", file)
	if !strings.Contains(r.Stdout, "verify: OK") || strings.Contains(r.Stdout+r.Stderr, "recorded") {
		t.Fatalf("verify --file with no ledger:\nstdout: %s\nstderr: %s", r.Stdout, r.Stderr)
	}
	if _, err := os.Lstat(none); !os.IsNotExist(err) {
		t.Fatalf("verify --file created the root %s (%v)", none, err)
	}
}

// TestProjectIsRecorded: every project run appends one ledger_projected
// after its lock_projected events, in counts, also when it changes
// nothing.
func TestProjectIsRecorded(t *testing.T) {
	t.Parallel()
	root, _ := accessLedger(t)
	if err := os.Remove(filepath.Join(root, "locks", "b.lock")); err != nil {
		t.Fatal(err)
	}
	r := clitest.Must(t, 0, root, "project")
	e := lastAccess(t, root, events.LedgerProjected)
	if e.Seq != 7 || e.Result != "ok" || e.Events != 5 || e.Locks != 2 || e.RowsChanged != 0 || e.FilesChanged != 1 ||
		!strings.Contains(r.Stdout, "recorded: lock_projected, seq 6") || !strings.Contains(r.Stdout, "recorded: ledger_projected, seq 7") {
		t.Fatalf("ledger_projected of a repair: %+v\n%s", e, r.Stdout)
	}
	clitest.Must(t, 0, root, "project")
	if e = lastAccess(t, root, events.LedgerProjected); e.Seq != 8 || e.Events != 7 || e.RowsChanged != 0 || e.FilesChanged != 0 {
		t.Fatalf("ledger_projected of a run with nothing to do: %+v", e)
	}
	clitest.Must(t, 0, root, "verify")
}

// TestReadsOfAReadOnlyRootWorkAndSayTheyWereNotRecorded: export and
// verify of a root the user cannot write (an archived copy) still work and
// report what they read, say on stderr that they could not record
// themselves, and leave the root as it was.
func TestReadsOfAReadOnlyRootWorkAndSayTheyWereNotRecorded(t *testing.T) {
	t.Parallel()
	asUser, base := asReader(t)
	root := readerRoot(t, base, "ro", "acquire", "a", "--pid", strconv.Itoa(os.Getpid()))
	setTreeMode(t, root, 0o500, 0o400)
	defer setTreeMode(t, root, 0o700, 0o600)
	before := treeListing(t, root)
	out := filepath.Join(base, "out")
	if err := os.Mkdir(out, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(out, 0o777); err != nil { // for uid 65534 too
		t.Fatal(err)
	}
	for _, args := range [][]string{{"export"}, {"export", "-o", filepath.Join(out, "x.jsonl")}, {"verify"}, {"verify", "--json"}} {
		r := asUser(root, args...)
		if r.Code != 0 || !strings.Contains(r.Stderr, "not recorded") || strings.Contains(r.Stdout, "recorded:") {
			t.Errorf("%v on a read-only root: exit %d, want 0 and a warning that it was not recorded\nstdout: %s\nstderr: %s",
				args, r.Code, r.Stdout, r.Stderr)
		}
	}
	if r := asUser(root, "verify", "--full"); !strings.Contains(r.Stdout, "verify: OK") || !strings.Contains(r.Stdout, " 1 (seq 1-1)") {
		t.Errorf("verify of a read-only root:\n%s", r.Stdout)
	}
	if after := treeListing(t, root); after != before {
		t.Errorf("reading a read-only root changed it:\n%s\n->\n%s", before, after)
	}
}

// TestReadsOfABusyRootWorkAndSayTheyWereNotRecorded: while another
// process holds the writer lock, export and verify give up recording
// after a short wait, warn, and succeed with what they read.
func TestReadsOfABusyRootWorkAndSayTheyWereNotRecorded(t *testing.T) {
	t.Parallel()
	root, _ := accessLedger(t)
	release := holdWriter(t, root)
	n := clitest.EventCount(t, root)
	r := clitest.Must(t, 0, root, "export", "--checkpoints=false")
	if strings.Count(r.Stdout, "\n") != n || !strings.Contains(r.Stderr, "not recorded") {
		t.Fatalf("export while the writer lock is held:\nstdout: %s\nstderr: %s", r.Stdout, r.Stderr)
	}
	r = clitest.Must(t, 0, root, "verify")
	if !strings.Contains(r.Stdout, "verify: OK") || !strings.Contains(r.Stderr, "not recorded") {
		t.Fatalf("verify while the writer lock is held:\nstdout: %s\nstderr: %s", r.Stdout, r.Stderr)
	}
	// --quiet hides chatter, not that the record misses a read.
	for _, args := range [][]string{{"export", "--checkpoints=false", "--quiet"}, {"verify", "--quiet"}} {
		r = clitest.Must(t, 0, root, args...)
		if !strings.Contains(r.Stderr, "not recorded") {
			t.Errorf("%v while the writer lock is held: stderr %q, want it to say the read was not recorded", args, r.Stderr)
		}
	}
	if got := clitest.EventCount(t, root); got != n {
		t.Fatalf("%d events, want %d: nothing recorded while the root was busy", got, n)
	}
	release()
	clitest.Must(t, 0, root, "verify")
	if got := clitest.EventCount(t, root); got != n+1 {
		t.Fatalf("%d events after the writer lock was let go, want %d", got, n+1)
	}
}
