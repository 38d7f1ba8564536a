package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/replay"
)

// An empty or blank export file is no proof of anything: verify --file
// fails it, exit 1, and names the problem.
func TestVerifyFileFailsAnEmptyOrBlankExport(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := t.TempDir()
	for name, data := range map[string]string{"empty.jsonl": "", "blank.jsonl": "\n  \n\n"} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		v := clitest.Verify(t, 1, root, "--file", path)
		if v.OK || v.FirstBad == nil || v.FirstBad.Kind != "empty" {
			t.Errorf("%s: %+v, want a failure of kind empty", name, v)
		}
		plain := clitest.Must(t, 1, root, "verify", "--file", path).Stdout
		if !strings.Contains(plain, "verify: FAILED") || !regexp.MustCompile(`first bad\s+empty: `).MatchString(plain) {
			t.Errorf("%s: plain report:\n%s", name, plain)
		}
	}
}

// forgery is one event of a log being re-chained: its body decoded, to edit.
type forgery struct {
	seq  int64
	body fixture.Body
}

func (f *forgery) str(k string) string { s, _ := f.body[k].(string); return s }

func (f *forgery) num(k string) int64 {
	n, _ := f.body[k].(json.Number).Int64()
	return n
}

func (f *forgery) at() time.Time {
	t, err := events.ParseTime(f.str("at"))
	if err != nil {
		panic(err)
	}
	return t
}

// restamp sets at, and event_id to match, as a careful forger would.
func (f *forgery) restamp(at time.Time) {
	f.body["at"], f.body["event_id"] = events.FormatTime(at), events.NewULID(at)
}

// renumber numbers the edited events from 1, gives acquisitions their
// seq as fencing token and releases their holding's new token, as a
// careful forger would.
func renumber(evs []*forgery) {
	tokens := map[int64]int64{} // old token -> new
	for i, f := range evs {
		seq := int64(i + 1)
		if typ := f.str("type"); (typ == string(events.LockAcquired) || typ == string(events.LockStolen)) && f.num("fencing_token") == f.seq {
			tokens[f.seq] = seq
			f.body["fencing_token"] = seq
		}
		f.seq = seq
	}
	for _, f := range evs {
		if f.str("type") == string(events.LockReleased) {
			if n, ok := tokens[f.num("fencing_token")]; ok {
				f.body["fencing_token"] = n
			}
		}
		f.body["seq"] = f.seq
	}
}

// sealForged renumbers the edited events and chains them from genesis,
// as the rows of an export file: every row is intact.
func sealForged(t *testing.T, evs []*forgery, genesis string) []replay.Row {
	t.Helper()
	renumber(evs)
	rows := make([]replay.Row, len(evs))
	prev := genesis
	for i, f := range evs {
		body, err := events.Canonical(f.body)
		if err != nil {
			t.Fatal(err)
		}
		rows[i] = replay.Row{Seq: f.seq, PrevHash: prev, Hash: events.ChainHash(f.seq, prev, body), Body: body}
		prev = rows[i].Hash
	}
	return rows
}

func decodeForgery(t *testing.T, seq int64, body []byte) *forgery {
	t.Helper()
	return &forgery{seq: seq, body: fixture.DecodeBody(t, body)}
}

// rechainLedger rewrites root's whole event log through a second SQLite
// connection, triggers dropped, as someone with write access to ledger.db
// could: edit changes the decoded events, and every row is then
// renumbered, chained from the ledger's genesis and hashed again, its
// stored Merkle hashes too.
func rechainLedger(t *testing.T, root string, edit func(evs []*forgery) []*forgery) {
	t.Helper()
	db := fixture.RawDB(t, root)
	defer db.Close()
	for _, q := range []string{`DROP TRIGGER events_no_update`, `DROP TRIGGER events_no_delete`, `DROP TRIGGER events_no_replace`,
		`DROP TRIGGER tlog_hashes_no_delete`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	fixture.Rechain(t, db, func(bodies []fixture.Body) []fixture.Body {
		evs := make([]*forgery, len(bodies))
		for i, b := range bodies {
			evs[i] = &forgery{seq: int64(i + 1), body: b}
		}
		evs = edit(evs)
		renumber(evs)
		out := make([]fixture.Body, len(evs))
		for i, f := range evs {
			out[i] = f.body
		}
		return out
	})
}

// checksLedger writes, with the command line, seq 1-5 on lock app:
// req-a acquires, heartbeats and releases; req-b acquires and releases.
func checksLedger(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	clitest.Unsigned(t, root) // the chain's own checks, which a signed head would preempt
	clitest.Must(t, 0, root, "acquire", "app", "--request-id", "req-a")
	clitest.Must(t, 0, root, "heartbeat", "app", "--request-id", "req-a")
	clitest.Must(t, 0, root, "release", "app", "--request-id", "req-a")
	clitest.Must(t, 0, root, "acquire", "app", "--request-id", "req-b")
	clitest.Must(t, 0, root, "release", "app", "--request-id", "req-b")
	if v := clitest.Verify(t, 0, root); !v.OK || v.Events != 5 {
		t.Fatalf("before the forgery: %+v", v)
	}
	return root
}

// TestVerifyFindsForgeriesInARechainedLog: the log is rewritten and
// re-chained from the genesis, every hash recomputed, so that the chain
// alone holds; verify still fails each forgery, naming its kind and first
// seq.
func TestVerifyFindsForgeriesInARechainedLog(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		edit func(evs []*forgery) []*forgery
		seq  int64
		kind string
	}{
		{"nothing changed but the hashes recomputed", func(evs []*forgery) []*forgery { return evs }, 0, ""},
		{"req-a's acquisition and heartbeat moved an hour later, after its release", func(evs []*forgery) []*forgery {
			evs[0].restamp(evs[0].at().Add(time.Hour))
			evs[1].restamp(evs[1].at().Add(time.Hour))
			return evs
		}, 3, "time_backwards"},
		{"the whole log backdated by a day, before the ledger was created", func(evs []*forgery) []*forgery {
			for _, f := range evs {
				f.restamp(f.at().Add(-24 * time.Hour))
			}
			return evs
		}, 1, "before_creation"},
		{"req-a's heartbeat at rewritten, not its event_id", func(evs []*forgery) []*forgery {
			evs[1].body["at"] = events.FormatTime(evs[1].at().Add(time.Second))
			return evs
		}, 2, "event_id_time"},
		{"req-b's acquisition given req-a's fencing token", func(evs []*forgery) []*forgery {
			evs[3].body["fencing_token"] = json.Number("1")
			return evs
		}, 4, "fencing_token"},
		{"req-b's release given req-a's fencing token", func(evs []*forgery) []*forgery {
			evs[4].body["fencing_token"] = json.Number("1")
			return evs
		}, 5, "fencing_token"},
		{"req-a's release dropped: req-b then acquired a held lock", func(evs []*forgery) []*forgery {
			return append(evs[:2:2], evs[3:]...)
		}, 3, "overlap"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root := checksLedger(t)
			rechainLedger(t, root, c.edit)
			if c.kind == "" {
				// The forger's code is sound: only the missing triggers show.
				if v := clitest.Verify(t, 1, root); v.FirstBad == nil || v.FirstBad.Kind != "trigger" {
					t.Fatalf("re-chained unchanged: %+v", v)
				}
				return
			}
			v := clitest.Verify(t, 1, root)
			if v.FirstBad == nil || v.FirstBad.Seq != c.seq || v.FirstBad.Kind != c.kind {
				t.Fatalf("first bad %+v, want seq %d %s", v.FirstBad, c.seq, c.kind)
			}
		})
	}
}

// TestVerifyFileReplaysAGenesisAnchoredExport: an export from seq 1 is
// replayed on its own, as the ledger is: an export re-chained without
// req-a's release (req-b then acquired a lock req-a still held) fails
// verify --file as an overlap, anchored at the genesis or not; the genuine
// export passes and says it was replayed; a slice that does not start at
// seq 1 says it was not.
func TestVerifyFileReplaysAGenesisAnchoredExport(t *testing.T) {
	t.Parallel()
	root := checksLedger(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "audit.jsonl")
	clitest.Must(t, 0, root, "export", "-o", file)
	ledger := clitest.Verify(t, 0, root)
	if ledger.Genesis == "" {
		t.Fatalf("no genesis: %+v", ledger)
	}
	plain := clitest.Must(t, 0, root, "verify", "--file", file, "--prev-hash", ledger.Genesis).Stdout
	if !regexp.MustCompile(`replay\s+1 locks replayed from seq 1`).MatchString(plain) {
		t.Fatalf("a genuine export from seq 1:\n%s", plain)
	}

	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var evs []*forgery
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var l struct {
			Body json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, decodeForgery(t, int64(i+1), l.Body))
	}
	var forged bytes.Buffer
	for _, r := range sealForged(t, append(evs[:2:2], evs[3:]...), ledger.Genesis) {
		if err := replay.WriteExportLine(&forged, &r); err != nil {
			t.Fatal(err)
		}
	}
	forgedFile := filepath.Join(dir, "forged.jsonl")
	if err := os.WriteFile(forgedFile, forged.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, anchor := range [][]string{{"--prev-hash", ledger.Genesis}, nil} {
		v := clitest.Verify(t, 1, root, append([]string{"--file", forgedFile}, anchor...)...)
		if v.FirstBad == nil || v.FirstBad.Seq != 3 || v.FirstBad.Kind != "overlap" || v.ProblemCount != 1 {
			t.Fatalf("re-chained export without a release %v: %+v", anchor, v)
		}
	}

	slice := filepath.Join(dir, "slice.jsonl")
	lines := strings.SplitAfter(forged.String(), "\n")
	if err := os.WriteFile(slice, []byte(strings.Join(lines[2:], "")), 0o600); err != nil {
		t.Fatal(err)
	}
	plain = clitest.Must(t, 0, root, "verify", "--file", slice).Stdout
	if !regexp.MustCompile(`replay\s+not checked: the file starts at seq 3`).MatchString(plain) {
		t.Fatalf("a slice from seq 3:\n%s", plain)
	}
}
