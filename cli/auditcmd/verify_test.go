package auditcmd_test

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/cli/internal/scenario"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/fixture"
)

// attacker opens the ledger's database as a second, ordinary sqlite
// connection and drops the append-only triggers, as an attacker would
// (verify then reports them missing, after the damage to the log).
func attacker(t *testing.T, root string) *sql.DB {
	t.Helper()
	db := fixture.RawDB(t, root)
	for _, q := range []string{`DROP TRIGGER events_no_update`, `DROP TRIGGER events_no_delete`, `DROP TRIGGER events_no_replace`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

func exec(t *testing.T, db *sql.DB, queries ...string) {
	t.Helper()
	for _, q := range queries {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// forgeHeartbeat inserts a schema-valid, correctly chained heartbeat by
// alice at seq, shifting every later row up by one (an INTEGER PRIMARY KEY
// leaves an attacker no other way to insert in the middle).
func forgeHeartbeat(t *testing.T, db *sql.DB, seq int64) {
	t.Helper()
	exec(t, db, `UPDATE events SET seq = -seq WHERE seq >= `+jsonNumber(seq), `UPDATE events SET seq = 1 - seq WHERE seq < 0`)
	at := scenario.T0.Add(40 * time.Second)
	fixture.Append(t, db, &events.Event{Envelope: events.Envelope{Seq: seq, Type: events.LockHeartbeat, At: events.FormatTime(at),
		LockName: "app-prod", RequestID: "req-alice", Actor: "alice", HostID: scenario.Host, PID: os.Getpid()}, // the scenario's holders
		Payload: &events.Heartbeat{}})
}

func jsonNumber(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestVerifyTamperCorpus damages the scenario's event log in each way an
// attacker with write access to ledger.db could (triggers dropped through
// a separate connection) and checks that verify fails, naming the first
// bad seq and the kind of damage.
func TestVerifyTamperCorpus(t *testing.T) {
	cases := []struct {
		name   string
		tamper func(t *testing.T, db *sql.DB)
		seq    int64
		kind   string
	}{
		{"modified body", func(t *testing.T, db *sql.DB) {
			exec(t, db, `UPDATE events SET body = CAST(replace(CAST(body AS TEXT), '"actor":"alice"', '"actor":"mallory"') AS BLOB) WHERE seq = 3`)
		}, 3, "modified"},
		{"modified column", func(t *testing.T, db *sql.DB) {
			exec(t, db, `UPDATE events SET actor = 'mallory' WHERE seq = 4`)
		}, 4, "column_mismatch"},
		{"deleted row", func(t *testing.T, db *sql.DB) {
			exec(t, db, `DELETE FROM events WHERE seq = 5`)
		}, 5, "deleted"},
		{"deleted row, later rows renumbered", func(t *testing.T, db *sql.DB) {
			exec(t, db, `DELETE FROM events WHERE seq = 5`, `UPDATE events SET seq = -seq WHERE seq > 5`,
				`UPDATE events SET seq = -seq - 1 WHERE seq < 0`)
		}, 5, "deleted"},
		{"inserted row", func(t *testing.T, db *sql.DB) { forgeHeartbeat(t, db, 4) }, 4, "inserted"},
		{"swapped rows", func(t *testing.T, db *sql.DB) {
			exec(t, db, `UPDATE events SET seq = -1 WHERE seq = 6`, `UPDATE events SET seq = 6 WHERE seq = 7`,
				`UPDATE events SET seq = 7 WHERE seq = -1`)
		}, 6, "reordered"},
		{"modified hash column", func(t *testing.T, db *sql.DB) {
			exec(t, db, `UPDATE events SET hash = '`+strings.Repeat("0", 64)+`' WHERE seq = 2`)
		}, 2, "modified"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := scenario.Write(t)
			clitest.Unsigned(t, root) // the chain's own findings, which a signed head would preempt
			if v := clitest.Verify(t, 0, root); !v.OK || v.Events != 8 {
				t.Fatalf("before tampering: %+v", v)
			}
			tc.tamper(t, attacker(t, root))
			// Below the head the verify above kept: the whole log.
			v := clitest.Verify(t, 1, root, "--full")
			if v.OK || v.FirstBad == nil || v.FirstBad.Seq != tc.seq || v.FirstBad.Kind != tc.kind {
				t.Fatalf("first bad = %+v, want seq %d %s\nall: %+v", v.FirstBad, tc.seq, tc.kind, v.Problems)
			}
			// The plain report says the same.
			plain := clitest.Must(t, 1, root, "verify", "--full").Stdout
			want := regexp.MustCompile(`first bad\s+seq ` + jsonNumber(tc.seq) + ` (\(lock [a-z-]+\) )?` + tc.kind + `:`)
			if !want.MatchString(plain) {
				t.Errorf("plain report lacks %s:\n%s", want, plain)
			}
		})
	}
}

// TestExportThenVerifyFile exports the scenario, verifies the file alone,
// then edits it.
func TestExportThenVerifyFile(t *testing.T) {
	root := scenario.Write(t)
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	clitest.Must(t, 0, root, "export", "-o", file)
	// The export's head is the ledger's hash at seq 8: the ledger_exported
	// event that records the export follows it.
	head := clitest.Strings(t, root, `SELECT hash FROM events WHERE seq = 8`)[0]
	v := clitest.Verify(t, 0, root, "--file", file)
	if !v.OK || v.Events != 8 || v.HeadHash != head {
		t.Fatalf("export: %+v (ledger hash at seq 8: %s)", v, head)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("export file: %v %v", fi, err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")

	// Anchored at the ledger's genesis.
	genesis := clitest.Verify(t, 0, root)
	clitest.Verify(t, 0, root, "--file", file, "--prev-hash", genesis.Genesis)
	clitest.Verify(t, 1, root, "--file", file, "--prev-hash", strings.Repeat("0", 64))

	edit := func(name string, lines []string) string {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	edited := slicesClone(lines)
	edited[2] = strings.Replace(edited[2], `"actor":"alice"`, `"actor":"mallory"`, 1)
	if edited[2] == lines[2] {
		t.Fatal("line 3 has no alice")
	}
	if v := clitest.Verify(t, 1, root, "--file", edit("edited.jsonl", edited)); v.FirstBad == nil || v.FirstBad.Seq != 3 || v.FirstBad.Kind != "modified" {
		t.Fatalf("edited export: %+v", v.FirstBad)
	}
	dropped := append(slicesClone(lines[:4]), lines[5:]...)
	if v := clitest.Verify(t, 1, root, "--file", edit("dropped.jsonl", dropped)); v.FirstBad == nil || v.FirstBad.Seq != 5 || v.FirstBad.Kind != "deleted" {
		t.Fatalf("export with a line removed: %+v", v.FirstBad)
	}

	// A time window exports a contiguous slice that verifies on its own.
	slice := filepath.Join(t.TempDir(), "slice.jsonl")
	clitest.Must(t, 0, root, "export", "--since", scenario.At(45), "--until", scenario.At(60), "-o", slice)
	if v := clitest.Verify(t, 0, root, "--file", slice); v.FirstSeq != 4 || v.LastSeq != 6 {
		t.Fatalf("slice: %+v", v)
	}
	// csv carries the hashes and the canonical body.
	out := clitest.Must(t, 0, root, "export", "--format", "csv").Stdout
	if !strings.HasPrefix(out, "seq,event_id,at,type,lock_name,request_id,actor,host_id,pid,prev_hash,hash,body,uid,user\n") ||
		!strings.Contains(out, head) || strings.Count(out, "\n") < 9 {
		t.Fatalf("csv export:\n%s", out)
	}
	clitest.Must(t, 2, root, "export", "--format", "xml")
	clitest.Must(t, 1, root, "verify", "--file", filepath.Join(t.TempDir(), "missing.jsonl"))
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// TestDeletedLockFileIsReportedAndProjected deletes the lock file of a
// held lock: verify reports it, project restores it; a foreign lock file
// beside it is reported as foreign, not damage, and left alone.
func TestDeletedLockFileIsReportedAndProjected(t *testing.T) {
	root := scenario.Write(t)
	lockPath := filepath.Join(root, "locks", "db-migrate.lock")
	want, err := os.ReadFile(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	foreign := events.Record{LockVersion: "v1", LockName: "legacy-job", RequestID: "cron-1", Actor: "cron", HostID: "host-b",
		PID: 7, CreatedAt: "2025-03-14T09:00:00Z", LastHeartbeatAt: "2025-03-14T09:00:00Z", TTLSeconds: 60}
	foreignPath := filepath.Join(root, "locks", "legacy-job.lock")
	if err := os.WriteFile(foreignPath, foreign.File(), 0o600); err != nil {
		t.Fatal(err)
	}
	if v := clitest.Verify(t, 0, root); !v.OK || len(v.Foreign) != 1 || v.Foreign[0].Lock != "legacy-job" {
		t.Fatalf("foreign file: %+v", v)
	}
	if err := os.Remove(lockPath); err != nil {
		t.Fatal(err)
	}
	v := clitest.Verify(t, 1, root)
	if v.FirstBad == nil || v.FirstBad.Kind != "lock_file_missing" || v.FirstBad.Lock != "db-migrate" {
		t.Fatalf("deleted lock file: %+v", v)
	}
	r := clitest.Must(t, 0, root, "project")
	if !strings.Contains(r.Stdout, "file placed") || !strings.Contains(r.Stdout, "db-migrate") ||
		!strings.Contains(r.Stdout, "foreign lock files left alone: legacy-job") {
		t.Fatalf("project:\n%s", r.Stdout)
	}
	got, err := os.ReadFile(lockPath)
	if err != nil || string(got) != string(want) {
		t.Fatalf("restored %q (%v), want %q", got, err, want)
	}
	if _, err := os.Stat(foreignPath); err != nil {
		t.Fatalf("foreign file touched: %v", err)
	}
	clitest.Verify(t, 0, root)
	var pr struct {
		Rows  []any `json:"rows"`
		Files []any `json:"files"`
	}
	if err := json.Unmarshal([]byte(clitest.Must(t, 0, root, "project", "--json").Stdout), &pr); err != nil ||
		len(pr.Rows)+len(pr.Files) != 0 {
		t.Fatalf("second project changed %+v (%v)", pr, err)
	}
}

// TestReadCommandsNeedALedger: the read side never creates one, and says
// there is none with its own exit code.
func TestReadCommandsNeedALedger(t *testing.T) {
	root := filepath.Join(t.TempDir(), "nothing-here")
	for _, args := range [][]string{{"timeline"}, {"history", "a"}, {"who", "a"}, {"replay"}, {"verify"}, {"export"}, {"project"}} {
		clitest.Must(t, invocation.ExitNoLedger, root, args...)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Fatalf("a read command created %s", root)
	}
}

// TestVerifyFailsWhenAnAppendOnlyTriggerIsMissingOrAltered: the triggers
// are what refuses an UPDATE, DELETE or REPLACE of an event; verify
// compares them with the ones the migrations create and names each one
// missing, altered or added.
func TestVerifyFailsWhenAnAppendOnlyTriggerIsMissingOrAltered(t *testing.T) {
	cases := []struct {
		name    string
		queries []string
		detail  string
	}{
		{"update trigger dropped", []string{`DROP TRIGGER events_no_update`}, "events_no_update on table events is missing"},
		{"delete trigger dropped", []string{`DROP TRIGGER events_no_delete`}, "events_no_delete on table events is missing"},
		{"replace trigger dropped", []string{`DROP TRIGGER events_no_replace`}, "events_no_replace on table events is missing"},
		{"delete trigger defanged", []string{`DROP TRIGGER events_no_delete`,
			`CREATE TRIGGER events_no_delete BEFORE DELETE ON events BEGIN SELECT 1; END`},
			"events_no_delete on table events is not the one the migrations create"},
		{"trigger added", []string{`CREATE TRIGGER events_rewrite AFTER INSERT ON events BEGIN SELECT 1; END`},
			"events_rewrite on table events was not created by the migrations"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := scenario.Write(t)
			exec(t, fixture.RawDB(t, root), tc.queries...)
			v := clitest.Verify(t, 1, root)
			if v.FirstBad == nil || v.FirstBad.Kind != "trigger" || !strings.Contains(v.FirstBad.Detail, tc.detail) ||
				len(v.Problems) != 1 {
				t.Fatalf("first bad = %+v, want a trigger problem saying %q\nall: %+v", v.FirstBad, tc.detail, v.Problems)
			}
			if plain := clitest.Must(t, 1, root, "verify").Stdout; !strings.Contains(plain, "trigger: "+tc.detail) {
				t.Errorf("plain report lacks %q:\n%s", tc.detail, plain)
			}
		})
	}
}

// TestVerifyComparesEveryColumnOfAFreeLocksRow: a free lock's row keeps
// its last holding's file (the fencing token the next holder's follows
// from, the request a leftover lock file is told by); a change to any of
// its columns is drift, named by column.
func TestVerifyComparesEveryColumnOfAFreeLocksRow(t *testing.T) {
	cases := []struct{ column, set string }{
		{"host_id", `host_id = 'mallory-host'`},
		{"request_id", `request_id = 'req-mallory'`},
		{"fencing_token", `fencing_token = 1`},
		{"updated_seq", `updated_seq = updated_seq - 1`},
		{"targets", `targets = '[{"format":"beads","path":"/tmp/x"}]'`},
		{"file", `file = CAST('{}' AS BLOB)`},
	}
	for _, tc := range cases {
		t.Run(tc.column, func(t *testing.T) {
			t.Parallel()
			root := scenario.Write(t) // app-prod ends free: dave released it
			db := fixture.RawDB(t, root)
			var held int
			if err := db.QueryRow(`SELECT count(*) FROM lock_holders WHERE lock_name = 'app-prod'`).Scan(&held); err != nil || held != 0 {
				t.Fatalf("app-prod: held %d (%v), want a free row", held, err)
			}
			exec(t, db, `UPDATE locks SET `+tc.set+` WHERE lock_name = 'app-prod'`)
			v := clitest.Verify(t, 1, root)
			if v.FirstBad == nil || v.FirstBad.Kind != "projection_drift" || v.FirstBad.Lock != "app-prod" ||
				!strings.Contains(v.FirstBad.Detail, "differs from replay in "+tc.column) {
				t.Fatalf("first bad = %+v, want projection_drift of app-prod naming %s\nall: %+v", v.FirstBad, tc.column, v.Problems)
			}
		})
	}
}
