package timelinecmd_test

import (
	"database/sql"
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/cli/internal/scenario"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/fixture"
)

// appendChained appends a schema-valid event at the end of root's log,
// chained to the last one, as the ledger's writer would (its API for these
// types is the commands' business; this exercises the readers).
func appendChained(t *testing.T, db *sql.DB, s float64, typ events.Type, lock, req, actor string, payload any) int64 {
	t.Helper()
	when := scenario.T0.Add(time.Duration(s * float64(time.Second)))
	return fixture.Append(t, db, &events.Event{Envelope: events.Envelope{Type: typ, At: events.FormatTime(when), LockName: lock,
		RequestID: req, Actor: actor, HostID: scenario.Host, PID: os.Getpid()}, Payload: payload}).Seq
}

// TestReadersShowRefusalsProjectionsJobProcessesAndDisplacement: a log
// with a refused release, a job's killed leftover processes, a projection
// and the release of a holder displaced by another tool's lock file is filtered by
// --type, described in the timeline, exported, and verified.
func TestReadersShowRefusalsProjectionsJobProcessesAndDisplacement(t *testing.T) {
	root := scenario.Write(t) // seq 1-8; db-migrate is still bob's (req-bob-db)
	db := fixture.RawDB(t, root)
	bob := &events.Holder{RequestID: "req-bob-db", Actor: "bob", HostID: scenario.Host, PID: os.Getpid(),
		CreatedAt: "2025-03-14T10:00:10Z", LastHeartbeatAt: "2025-03-14T10:00:10Z"}
	refused := appendChained(t, db, 220, events.ActionRefused, "db-migrate", "req-eve", "eve", &events.Refused{
		Action: events.ActionRelease, Error: "not the holder", State: events.StateHeld, HeldBy: bob})
	job := appendChained(t, db, 230, events.JobProcesses, "db-migrate", "req-bob-db", "bob", &events.JobProcessesPayload{
		JobRequestID: "req-bob-db", PIDs: []int{31337, 31338}, Action: events.JobKilled, Note: "left the process group"})
	projected := appendChained(t, db, 240, events.LockProjected, "app-prod", "req-project", "oncall", &events.Projected{
		Changes: []string{"lock file restored"}, MovedAside: filepath.Join(root, "locks", "app-prod.lock.corrupt-1")})
	displaced := appendChained(t, db, 250, events.LockReleased, "db-migrate", "req-frank", "frank", &events.Released{
		HeldDurationSeconds: 240, Result: events.ResultCancelled, Forced: true, ReleasedRequestID: "req-bob-db", FencingToken: 2,
		DisplacedBy:       &events.Holder{RequestID: "foreign:bso", Actor: "bso", HostID: scenario.Host, PID: 4711},
		DisplacedByFormat: "bso", DisplacedByPath: "/srv/app/.bso.lock"})

	got := seqsOf(t, clitest.Must(t, 0, root, "timeline", "--format", "jsonl", "--type", "action_refused,lock_projected",
		"--type", "job_processes").Stdout)
	if want := []int64{refused, job, projected}; !slices.Equal(got, want) {
		t.Errorf("timeline --type of the new types: %v, want %v", got, want)
	}
	table := clitest.Must(t, 0, root, "history", "db-migrate").Stdout
	for _, want := range []string{
		`REFUSED release, state held, held by req-bob-db (bob`,
		`job req-bob-db: 2 processes killed, pids 31337 31338, note "left the process group"`,
		"FORCED, released req-bob-db, DISPLACED by foreign:bso (bso, pid 4711@" + scenario.Host + ") via bso file /srv/app/.bso.lock",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("history db-migrate lacks %q:\n%s", want, table)
		}
	}
	if out := clitest.Must(t, 0, root, "timeline", "--lock", "app-prod", "--type", "lock_projected", "--wide").Stdout; !strings.Contains(out,
		"lock file restored, moved aside to "+filepath.Join(root, "locks", "app-prod.lock.corrupt-1")) {
		t.Errorf("timeline of the projection:\n%s", out)
	}
	recs, err := csv.NewReader(strings.NewReader(clitest.Must(t, 0, root, "export", "--format", "csv").Stdout)).ReadAll()
	if err != nil || len(recs) != int(displaced)+1 || recs[refused][3] != "action_refused" || recs[job][3] != "job_processes" {
		t.Fatalf("export csv: %v, %d records: %v", err, len(recs), recs)
	}

	// The displaced holder's release freed db-migrate in the log; project brings
	// the locks table along (recording that it did), and verify then finds
	// nothing wrong.
	clitest.Must(t, 0, root, "project")
	// (after export's ledger_exported) the lock_projected of db-migrate, then the run's ledger_projected
	recorded := int64(clitest.EventCount(t, root))
	if typ := clitest.Strings(t, root, `SELECT type || ' ' || lock_name FROM events ORDER BY seq DESC LIMIT 2`); typ[1] != "lock_projected db-migrate" ||
		typ[0] != "ledger_projected " {
		t.Fatalf("project recorded %v", typ)
	}
	if v := clitest.Verify(t, 0, root); !v.OK || v.LastSeq != recorded {
		t.Fatalf("verify after project: %+v", v)
	}
	recorded++ // verify's ledger_verified
	if out := clitest.Must(t, 0, root, "who", "db-migrate", "--at", scenario.At(260)).Stdout; !strings.Contains(out, "free") {
		t.Errorf("who db-migrate after the displaced holder's release:\n%s", out)
	}
	jsonl := clitest.Must(t, 0, root, "export").Stdout
	file := filepath.Join(t.TempDir(), "export.jsonl")
	if err := os.WriteFile(file, []byte(jsonl), 0o600); err != nil {
		t.Fatal(err)
	}
	if v := clitest.Verify(t, 0, root, "--file", file); !v.OK || v.LastSeq != recorded {
		t.Fatalf("verify --file: %+v", v)
	}
}
