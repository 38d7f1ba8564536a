package timelinecmd_test

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/cli/internal/scenario"

	"github.com/lockledger/lockledger/internal/clitest"
)

type whoJSON struct {
	LockName string `json:"lock_name"`
	At       string `json:"at"`
	State    string `json:"state"`
	Holder   *struct {
		RequestID       string `json:"request_id"`
		Actor           string `json:"actor"`
		HostID          string `json:"host_id"`
		LastHeartbeatAt string `json:"last_heartbeat_at"`
		TTLSeconds      int64  `json:"ttl_seconds"`
	} `json:"holder"`
	StaleSince string `json:"stale_since"`
}

// TestWhoAtEveryInstantOfTheScenario asks who held app-prod at instants
// before, at and between every step of the scenario.
func TestWhoAtEveryInstantOfTheScenario(t *testing.T) {
	root := scenario.Write(t)
	cases := []struct {
		s         float64
		state     string
		holder    string
		heartbeat string
	}{
		{-1, "free", "", ""},
		{0, "held", "req-alice", "2025-03-14T10:00:00Z"}, // at <= T includes the event at T
		{5, "held", "req-alice", "2025-03-14T10:00:00Z"},
		{30, "held", "req-alice", "2025-03-14T10:00:30Z"},
		{47, "held", "req-alice", "2025-03-14T10:00:30Z"}, // a blocked acquire changes nothing
		{49.999, "held", "req-alice", "2025-03-14T10:00:30Z"},
		{50, "free", "", ""},
		{55, "free", "", ""},
		{61, "held", "req-carol", "2025-03-14T10:01:00Z"},
		{90, "held", "req-carol", "2025-03-14T10:01:00Z"}, // exactly ttl: not yet stale
		{100, "stale", "req-carol", "2025-03-14T10:01:00Z"},
		{205, "held", "req-dave", "2025-03-14T10:03:20Z"},
		{215, "free", "", ""},
	}
	for _, tc := range cases {
		r := clitest.Must(t, 0, root, "who", "app-prod", "--at", scenario.At(tc.s), "--json")
		var got whoJSON
		if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil {
			t.Fatalf("t0+%vs: %v: %s", tc.s, err, r.Stdout)
		}
		holder, hb := "", ""
		if got.Holder != nil {
			holder, hb = got.Holder.RequestID, got.Holder.LastHeartbeatAt
			if got.Holder.HostID != scenario.Host {
				t.Errorf("t0+%vs: host %q", tc.s, got.Holder.HostID)
			}
		}
		if got.LockName != "app-prod" || got.State != tc.state || holder != tc.holder || hb != tc.heartbeat {
			t.Errorf("who app-prod --at t0+%vs = %s %q hb %q, want %s %q hb %q", tc.s, got.State, holder, hb, tc.state,
				tc.holder, tc.heartbeat)
		}
		if tc.state == "stale" && got.StaleSince != "2025-03-14T10:01:30.000000000Z" {
			t.Errorf("stale since %q", got.StaleSince)
		}
	}
	// The plain form, for a postmortem.
	out := clitest.Must(t, 0, root, "who", "app-prod", "--at", scenario.At(100)).Stdout
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{"app-prod at 2025-03-14T10:01:40.000000000Z: stale", "request req-carol", "actor carol",
		"stale since 2025-03-14T10:01:30", "last event seq 6 lock_acquired by carol"} {
		if !strings.Contains(flat, want) {
			t.Errorf("who plain output lacks %q:\n%s", want, out)
		}
	}
	clitest.Must(t, 2, root, "who", "app-prod", "--at", "yesterday-ish")
	clitest.Must(t, 2, root, "who", "App Prod")
}

type replayJSON struct {
	AsOf  string `json:"as_of"`
	Locks []struct {
		LockName     string `json:"lock_name"`
		State        string `json:"state"`
		RequestID    string `json:"request_id"`
		Actor        string `json:"actor"`
		FencingToken int64  `json:"fencing_token"`
		Intent       string `json:"intent"`
		LockVersion  string `json:"lock_version"`
	} `json:"locks"`
}

func TestReplayAsOf(t *testing.T) {
	root := scenario.Write(t)
	var got replayJSON
	r := clitest.Must(t, 0, root, "replay", "--as-of", scenario.At(100), "--json")
	if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil {
		t.Fatal(err)
	}
	summary := func(g replayJSON) string {
		var s []string
		for _, l := range g.Locks {
			s = append(s, fmt.Sprintf("%s=%s:%s:%d", l.LockName, l.State, l.RequestID, l.FencingToken))
		}
		return g.AsOf + " " + strings.Join(s, " ")
	}
	if s := summary(got); s != "2025-03-14T10:01:40.000000000Z app-prod=stale:req-carol:6 db-migrate=held:req-bob-db:2" {
		t.Fatalf("replay --as-of t0+100s: %s", s)
	}
	if got.Locks[0].LockVersion != "v1" {
		t.Fatalf("v1 fields missing: %s", r.Stdout)
	}
	got = replayJSON{}
	r = clitest.Must(t, 0, root, "replay", "--as-of", scenario.At(47), "--lock", "app-prod")
	if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil {
		t.Fatal(err)
	}
	if s := summary(got); s != "2025-03-14T10:00:47.000000000Z app-prod=held:req-alice:1" || got.Locks[0].Intent != "deploy" {
		t.Fatalf("replay --as-of t0+47s --lock app-prod: %s", s)
	}
	got = replayJSON{}
	r = clitest.Must(t, 0, root, "replay", "--as-of", scenario.At(215), "--json")
	if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil {
		t.Fatal(err)
	}
	if s := summary(got); s != "2025-03-14T10:03:35.000000000Z app-prod=free::0 db-migrate=held:req-bob-db:2" {
		t.Fatalf("replay --as-of t0+215s: %s", s)
	}
	got = replayJSON{}
	r = clitest.Must(t, 0, root, "replay", "--as-of", scenario.At(-1), "--json")
	if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil || len(got.Locks) != 0 {
		t.Fatalf("replay before the first event: %s %v", r.Stdout, err)
	}
}

func seqsOf(t *testing.T, jsonl string) []int64 {
	t.Helper()
	var out []int64
	for _, line := range strings.Split(strings.TrimSpace(jsonl), "\n") {
		if line == "" {
			continue
		}
		var ev struct {
			Seq      int64  `json:"seq"`
			PrevHash string `json:"prev_hash"`
			Hash     string `json:"hash"`
			Type     string `json:"type"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if len(ev.Hash) != 64 || len(ev.PrevHash) != 64 || ev.Type == "" {
			t.Fatalf("event line without its links: %s", line)
		}
		out = append(out, ev.Seq)
	}
	return out
}

func TestTimelineFiltersAndFormats(t *testing.T) {
	root := scenario.Write(t)
	filters := []struct {
		args []string
		want []int64
	}{
		{nil, []int64{1, 2, 3, 4, 5, 6, 7, 8}},
		{[]string{"--lock", "app-prod"}, []int64{1, 3, 4, 5, 6, 7, 8}},
		{[]string{"--actor", "bob"}, []int64{2, 4}},
		{[]string{"--type", "lock_stolen,acquire_blocked"}, []int64{4, 7}},
		{[]string{"--type", "lock_released", "--type", "lock_heartbeat"}, []int64{3, 5, 8}},
		{[]string{"--since", scenario.At(45), "--until", scenario.At(200)}, []int64{4, 5, 6, 7}},
		{[]string{"--lock", "app-prod", "--since", scenario.At(46), "--until", scenario.At(60)}, []int64{5, 6}},
		{[]string{"--actor", "alice", "--type", "lock_released"}, []int64{5}},
		{[]string{"--until", "1h"}, []int64{1, 2, 3, 4, 5, 6, 7, 8}}, // an hour ago: the scenario is older
		{[]string{"--since", "1h"}, nil},
	}
	for _, f := range filters {
		args := append([]string{"timeline", "--format", "jsonl"}, f.args...)
		if got := seqsOf(t, clitest.Must(t, 0, root, args...).Stdout); !slices.Equal(got, f.want) {
			t.Errorf("timeline %v = %v, want %v", f.args, got, f.want)
		}
	}
	// history NAME is timeline --lock NAME; --json means --format json (one array).
	var hist []struct {
		Seq int64 `json:"seq"`
	}
	if err := json.Unmarshal([]byte(clitest.Must(t, 0, root, "history", "app-prod", "--json").Stdout), &hist); err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, e := range hist {
		got = append(got, e.Seq)
	}
	if !slices.Equal(got, []int64{1, 3, 4, 5, 6, 7, 8}) {
		t.Errorf("history app-prod = %v", got)
	}

	// jsonl carries the stored hashes.
	var hash3 string
	if err := clitest.DB(t, root).QueryRow(`SELECT hash FROM events WHERE seq = 3`).Scan(&hash3); err != nil {
		t.Fatal(err)
	}
	if out := clitest.Must(t, 0, root, "timeline", "--format", "jsonl", "--type", "lock_heartbeat").Stdout; !strings.Contains(out, `"hash":"`+hash3+`"`) {
		t.Errorf("jsonl lacks the stored hash %s: %s", hash3, out)
	}

	// json: one array.
	var arr []map[string]any
	if err := json.Unmarshal([]byte(clitest.Must(t, 0, root, "timeline", "--format", "json").Stdout), &arr); err != nil || len(arr) != 8 {
		t.Fatalf("json: %d events, %v", len(arr), err)
	}
	if err := json.Unmarshal([]byte(clitest.Must(t, 0, root, "timeline", "--format", "json", "--since", "1h").Stdout), &arr); err != nil || len(arr) != 0 {
		t.Fatalf("empty json: %v %v", arr, err)
	}

	// csv: a header and one record per event, with the details.
	recs, err := csv.NewReader(strings.NewReader(clitest.Must(t, 0, root, "timeline", "--format", "csv", "--lock", "app-prod").Stdout)).ReadAll()
	if err != nil || len(recs) != 8 {
		t.Fatalf("csv: %d records, %v", len(recs), err)
	}
	if strings.Join(recs[0][:9], ",") != "seq,at,type,lock_name,actor,host_id,pid,request_id,details" {
		t.Errorf("csv header %v", recs[0])
	}
	if recs[6][0] != "7" || recs[6][2] != "lock_stolen" || !strings.Contains(recs[6][8], "reason stale_lock_forced, from req-carol (carol") {
		t.Errorf("csv stolen row %v", recs[6])
	}

	// table: a postmortem's view, never coloured off a terminal (--wide:
	// every field whole, one line per event).
	table := clitest.Must(t, 0, root, "timeline", "--lock", "app-prod", "--wide").Stdout
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 8 || !strings.HasPrefix(lines[0], "SEQ  TIME (UTC)") {
		t.Fatalf("table:\n%s", table)
	}
	for _, want := range []string{
		"2025-03-14T10:00:00.000Z  lock_acquired",
		"token 1, ttl 60s, intent deploy v42, metadata ticket=INC-7",
		"state held, held by req-alice (alice",
		"waited 5s",
		"result failure, failure step migrate, exit 3, held 50s",
		"reason stale_lock_forced, from req-carol (carol, pid",
		"carol", "dave", scenario.Host,
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	if strings.Contains(table, "\x1b[") {
		t.Errorf("colour off a terminal:\n%q", table)
	}
	// Columns line up: the EVENT column starts at the same offset on every line.
	col := strings.Index(lines[0], "EVENT")
	for _, l := range lines[1:] {
		if l[col-2:col] != "  " || l[col] == ' ' {
			t.Errorf("misaligned line %q", l)
		}
	}

	// Bad input is refused with exit 2 and nothing on stdout.
	for _, bad := range [][]string{
		{"timeline", "--type", "lock_grabbed"},
		{"timeline", "--since", scenario.At(10), "--until", scenario.At(5)},
		{"timeline", "--format", "xml"},
		{"timeline", "--lock", "Not_A_Lock"},
		{"history", "app-prod", "--since", "soon"},
	} {
		if r := clitest.Must(t, 2, root, bad...); r.Stdout != "" {
			t.Errorf("%v printed %q", bad, r.Stdout)
		}
	}
}

// history pages from the newest: --limit N keeps the newest N of the
// events it would print, still oldest first, and --before SEQ those before
// SEQ, so that --before the first seq of a page prints the page before.
func TestHistoryPages(t *testing.T) {
	root := scenario.Write(t)
	for _, p := range []struct {
		args []string
		want []int64
	}{
		{[]string{"--limit", "3"}, []int64{6, 7, 8}},
		{[]string{"--limit", "3", "--before", "6"}, []int64{3, 4, 5}},
		{[]string{"--limit", "3", "--before", "3"}, []int64{1}},
		{[]string{"--before", "5"}, []int64{1, 3, 4}},
		{[]string{"--before", "1"}, nil},
		{[]string{"--limit", "100"}, []int64{1, 3, 4, 5, 6, 7, 8}},
		{[]string{"--limit", "1", "--since", scenario.At(46), "--until", scenario.At(60)}, []int64{6}},
		{[]string{"--limit", "2", "--before", "8", "--until", scenario.At(60)}, []int64{5, 6}},
	} {
		args := append([]string{"history", "app-prod", "--format", "jsonl"}, p.args...)
		if got := seqsOf(t, clitest.Must(t, 0, root, args...).Stdout); !slices.Equal(got, p.want) {
			t.Errorf("history %v = %v, want %v", p.args, got, p.want)
		}
	}
	for _, bad := range [][]string{{"--limit", "-1"}, {"--before", "-3"}} {
		r := clitest.Must(t, 2, root, append([]string{"history", "app-prod"}, bad...)...)
		if r.Stdout != "" || !strings.Contains(r.Stderr, bad[0]) {
			t.Errorf("history %v: stdout %q, stderr %q", bad, r.Stdout, r.Stderr)
		}
	}
}
