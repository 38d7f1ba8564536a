package auditcmd_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/cli/internal/scenario"

	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/fixture"
)

// projection is everything project may change: the locks table, the lock
// files and the number of events.
func projection(t *testing.T, root string) string {
	t.Helper()
	rows := clitest.Strings(t, root, `SELECT l.lock_name || '|' || (h.request_id IS NOT NULL) || '|' || l.request_id || '|' ||
		coalesce(h.actor, '') || '|' || l.updated_seq || '|' || hex(l.file)
		FROM locks l LEFT JOIN lock_holders h ON h.lock_name = l.lock_name AND h.exclusive = 1 ORDER BY l.lock_name`)
	entries, err := os.ReadDir(filepath.Join(root, "locks"))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(root, "locks", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, e.Name()+"="+string(b))
	}
	sort.Strings(files)
	return fmt.Sprintf("rows %q\nfiles %q\nevents %d", rows, files, clitest.EventCount(t, root))
}

// projectionOnly is projection without the event count: the locks table
// and the lock files.
func projectionOnly(t *testing.T, root string) string {
	t.Helper()
	p := projection(t, root)
	return p[:strings.LastIndex(p, "\nevents ")]
}

// lastEvent is the type and body of the last event.
func lastEvent(t *testing.T, root string) (string, string) {
	t.Helper()
	r := clitest.Strings(t, root, `SELECT type || ' ' || body FROM events ORDER BY seq DESC LIMIT 1`)
	typ, body, _ := strings.Cut(r[0], " ")
	return typ, body
}

type projected struct {
	Seq                 int64
	Lock                string   `json:"lock_name"`
	Changes             []string `json:"changes"`
	MovedAside          string   `json:"moved_aside"`
	BrokenChainAccepted bool     `json:"broken_chain_accepted"`
	FirstBadSeq         int64    `json:"first_bad_seq"`
}

// projectedEvents reads the lock_projected events of root, by lock name.
func projectedEvents(t *testing.T, root string) map[string]projected {
	t.Helper()
	out := map[string]projected{}
	for _, body := range clitest.Strings(t, root, `SELECT body FROM events WHERE type = 'lock_projected' ORDER BY seq`) {
		var p projected
		if err := json.Unmarshal([]byte(body), &p); err != nil {
			t.Fatal(err)
		}
		out[p.Lock] = p
	}
	return out
}

// TestProjectRefusesABrokenChainAndChangesNothing: after an event is
// deleted or its body rewritten (triggers dropped, as an attacker would),
// project exits 1 naming the first bad seq and the kind of damage, and
// the locks table and the lock files stay exactly as they were, although
// replay of the forged log would change them; the one event added is the
// ledger_projected that records the refusal. With --accept-broken-chain it
// projects the log as it reads and records that it did; the events it
// records add no damage of their own.
func TestProjectRefusesABrokenChainAndChangesNothing(t *testing.T) {
	cases := []struct {
		name   string
		tamper string
		kind   string
		change string // in the recorded changes of db-migrate
	}{
		// bob's acquisition of db-migrate gone: replay says the ledger never held it.
		{"deleted event", `DELETE FROM events WHERE seq = 2`, "deleted", "locks row deleted"},
		// bob's acquisition now names mallory.
		{"rewritten body", `UPDATE events SET body = replace(body, '"actor":"bob"', '"actor":"mallory"') WHERE seq = 2`,
			"modified", "lock file rewritten"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := scenario.Write(t)
			clitest.Unsigned(t, root) // the chain's own findings, which a signed head would preempt
			exec(t, attacker(t, root), tc.tamper)
			before, n := projectionOnly(t, root), clitest.EventCount(t, root)
			r := clitest.Must(t, 1, root, "project")
			if want := "first bad seq 2, " + tc.kind; !strings.Contains(r.Stderr, want) || !strings.Contains(r.Stderr, "changed neither") ||
				!strings.Contains(r.Stderr, "the refusal is recorded: ledger_projected") {
				t.Fatalf("refusal does not say %q:\n%s", want, r.Stderr)
			}
			if after := projectionOnly(t, root); after != before {
				t.Fatalf("a refused project changed the projections:\n%s\nwas\n%s", after, before)
			}
			typ, body := lastEvent(t, root)
			if got := clitest.EventCount(t, root); got != n+1 || typ != "ledger_projected" ||
				!strings.Contains(body, `"result":"refused"`) || !strings.Contains(body, `"first_bad_seq":2`) {
				t.Fatalf("a refused project recorded %d events, the last %s %s; want its ledger_projected, refused at seq 2", got-n, typ, body)
			}
			var refusal struct {
				Error    string `json:"error"`
				FirstBad struct {
					Seq  int64  `json:"seq"`
					Kind string `json:"kind"`
				} `json:"first_bad"`
			}
			r = clitest.Must(t, 1, root, "project", "--json")
			if err := json.Unmarshal([]byte(r.Stdout), &refusal); err != nil || refusal.Error != "broken_chain" ||
				refusal.FirstBad.Seq != 2 || refusal.FirstBad.Kind != tc.kind {
				t.Fatalf("project --json refusal: %+v (%v)\n%s", refusal, err, r.Stdout)
			}
			if after := projectionOnly(t, root); after != before {
				t.Fatalf("a refused project --json changed the projections:\n%s\nwas\n%s", after, before)
			}

			r = clitest.Must(t, 0, root, "project", "--accept-broken-chain")
			if !strings.Contains(r.Stdout, "first bad seq 2, "+tc.kind) || !strings.Contains(r.Stdout, "--accept-broken-chain") {
				t.Fatalf("forced project does not say so:\n%s", r.Stdout)
			}
			p, ok := projectedEvents(t, root)["db-migrate"]
			if !ok || !p.BrokenChainAccepted || p.FirstBadSeq != 2 || !strings.Contains(strings.Join(p.Changes, "; "), tc.change) {
				t.Fatalf("lock_projected of the forced project: %+v (found %v)", p, ok)
			}
			// The log is still damaged, but the projections now match it and
			// the recorded events add nothing to what verify finds: the
			// damage, and the append-only triggers the attacker dropped.
			v := clitest.Verify(t, 1, root)
			if v.FirstBad == nil || v.FirstBad.Seq != 2 || v.FirstBad.Kind != tc.kind {
				t.Fatalf("verify after the forced project: %+v", v)
			}
			for _, pr := range v.Problems {
				if pr.Kind != tc.kind && pr.Kind != "trigger" {
					t.Fatalf("verify after the forced project finds %s besides the damage: %+v", pr.Kind, v.Problems)
				}
			}
		})
	}
}

// TestProjectSaysWhatItRecordsFromABrokenChain: the refusal promises a
// record only of what a forced project changes, and a forced project with
// nothing left to change records its run (ledger_projected) and no change.
func TestProjectSaysWhatItRecordsFromABrokenChain(t *testing.T) {
	root := scenario.Write(t)
	exec(t, attacker(t, root), `DELETE FROM events WHERE seq = 2`)
	r := clitest.Must(t, 1, root, "project")
	if strings.Contains(r.Stderr, "anyway (recorded)") || !strings.Contains(r.Stderr, "records what it changes") {
		t.Fatalf("the refusal promises a record whatever happens:\n%s", r.Stderr)
	}
	clitest.Must(t, 0, root, "project", "--accept-broken-chain")
	n := clitest.EventCount(t, root)
	r = clitest.Must(t, 0, root, "project", "--accept-broken-chain")
	if !strings.Contains(r.Stdout, "no change") || strings.Contains(r.Stdout, "lock_projected") {
		t.Fatalf("a forced project with nothing to change:\n%s", r.Stdout)
	}
	if got := clitest.EventCount(t, root); got != n+1 {
		t.Fatalf("a forced project with nothing to change recorded %d events, want its run alone", got-n)
	}
	if typ, _ := lastEvent(t, root); typ != "ledger_projected" {
		t.Fatalf("a forced project with nothing to change recorded %s, want ledger_projected", typ)
	}
}

// TestProjectRecordsWhatItRepairs: a lock file deleted and a locks row
// edited are put right by project, which records one lock_projected per
// lock saying what it changed, and the run in a ledger_projected; a second
// project changes nothing and records only its run; verify is OK.
func TestProjectRecordsWhatItRepairs(t *testing.T) {
	root := scenario.Write(t)
	if err := os.Remove(filepath.Join(root, "locks", "db-migrate.lock")); err != nil {
		t.Fatal(err)
	}
	db := fixture.RawDB(t, root)
	// app-prod, free, is given back to its last holder, req-dave, as a holder
	// row no event makes.
	exec(t, db, `INSERT INTO lock_holders (lock_name, request_id, actor, intent, intent_version, host_id, pid, pid_start, boot_id,
		created_at, heartbeat_at, ttl_seconds, metadata, fencing_token, slot_limit, updated_seq, pid_ns, exclusive, targets)
		SELECT 'app-prod', (SELECT request_id FROM locks WHERE lock_name = 'app-prod'), actor, intent, intent_version, host_id, pid,
		pid_start, boot_id, created_at, heartbeat_at, ttl_seconds, metadata, fencing_token, slot_limit, updated_seq, pid_ns, 1, targets
		FROM lock_holders WHERE lock_name = 'db-migrate' AND exclusive = 1`)
	clitest.Verify(t, 1, root)
	events := clitest.EventCount(t, root)

	r := clitest.Must(t, 0, root, "project")
	if !strings.Contains(r.Stdout, "recorded: 2 lock_projected events") {
		t.Fatalf("project:\n%s", r.Stdout)
	}
	got := projectedEvents(t, root)
	if len(got) != 2 || clitest.EventCount(t, root) != events+3 {
		t.Fatalf("lock_projected events: %+v", got)
	}
	if typ, body := lastEvent(t, root); typ != "ledger_projected" || !strings.Contains(body, `"result":"ok"`) ||
		!strings.Contains(body, `"rows_changed":1`) || !strings.Contains(body, `"files_changed":1`) {
		t.Fatalf("the run's record: %s %s\n%s", typ, body, r.Stdout)
	}
	lockPath := filepath.Join(root, "locks", "db-migrate.lock")
	if c := got["db-migrate"].Changes; len(c) != 1 || c[0] != "lock file restored ("+lockPath+")" {
		t.Fatalf("db-migrate's changes: %q", c)
	}
	if c := got["app-prod"].Changes; len(c) != 1 || c[0] != "lock_holders row deleted: exclusive holder req-dave, whom no event gives the lock" {
		t.Fatalf("app-prod's changes: %q", c)
	}
	for _, p := range got {
		if p.BrokenChainAccepted || p.FirstBadSeq != 0 || p.MovedAside != "" {
			t.Fatalf("a repair of an intact log recorded %+v", p)
		}
	}
	clitest.Verify(t, 0, root)

	before := projectionOnly(t, root)
	r = clitest.Must(t, 0, root, "project")
	if !strings.Contains(r.Stdout, "no change") || strings.Contains(r.Stdout, "lock_projected") ||
		!strings.Contains(r.Stdout, "recorded: ledger_projected") {
		t.Fatalf("second project:\n%s", r.Stdout)
	}
	if after := projectionOnly(t, root); after != before {
		t.Fatalf("a project with nothing to do changed the projections:\n%s\nwas\n%s", after, before)
	}
	if typ, body := lastEvent(t, root); typ != "ledger_projected" || !strings.Contains(body, `"rows_changed":0`) ||
		!strings.Contains(body, `"files_changed":0`) {
		t.Fatalf("the second run's record: %s %s", typ, body)
	}
	clitest.Verify(t, 0, root)
}
