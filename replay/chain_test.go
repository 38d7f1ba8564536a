package replay

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/verify"
)

var testBase = time.Date(2025, 3, 14, 10, 0, 0, 0, time.UTC)

const testLedgerID = "0123456789abcdef0123456789abcdef"

// sealed builds event seq (an acquire for 1, heartbeats after) chained from prev.
func sealed(t *testing.T, seq int64, prev, actor string) Row {
	t.Helper()
	at := testBase.Add(time.Duration(seq) * time.Second)
	ev := &events.Event{
		Envelope: events.Envelope{EventID: events.NewULID(at), Seq: seq, Type: events.LockHeartbeat,
			SchemaVersion: events.SchemaVersion, At: events.FormatTime(at),
			LockName: "app-prod", RequestID: "req-1", Actor: actor, HostID: "host-a", PID: 42},
		Payload:  &events.Heartbeat{},
		PrevHash: prev,
	}
	if seq == 1 {
		ev.Type = events.LockAcquired
		ev.Payload = &events.Acquired{TTLSeconds: 60, FencingToken: 1, Metadata: map[string]string{}}
	}
	if err := ev.Seal(); err != nil {
		t.Fatal(err)
	}
	return Row{Seq: seq, PrevHash: ev.PrevHash, Hash: ev.Hash, Body: ev.Body}
}

func goodChain(t *testing.T, n int) []Row {
	prev := events.Genesis(testLedgerID)
	var rows []Row
	for i := 1; i <= n; i++ {
		r := sealed(t, int64(i), prev, "alice")
		rows = append(rows, r)
		prev = r.Hash
	}
	return rows
}

func check(t *testing.T, rows []Row, genesis string) *verify.Report {
	t.Helper()
	c := newChecker("test", genesis, true, newVerifyConfig(nil))
	for i := range rows {
		r := rows[i]
		c.row(&r)
	}
	c.finish()
	c.report.Finish()
	return c.report
}

// renumber sets every row's position from index, starting at first.
func renumber(rows []Row, from int, delta int64) []Row {
	for i := from; i < len(rows); i++ {
		rows[i].Seq += delta
	}
	return rows
}

func TestChainClassifiesDamage(t *testing.T) {
	const n = 10
	genesis := events.Genesis(testLedgerID)
	cases := []struct {
		name   string
		tamper func(t *testing.T, rows []Row) []Row
		seq    int64
		kind   verify.Kind
	}{
		{"body changed, hash kept", func(t *testing.T, r []Row) []Row {
			r[3].Body = bytes.Replace(r[3].Body, []byte(`"alice"`), []byte(`"mallory"`), 1)
			return r
		}, 4, verify.KindModified},
		{"hash column changed", func(t *testing.T, r []Row) []Row { r[4].Hash = strings.Repeat("0", 64); return r }, 5, verify.KindModified},
		{"prev_hash column changed", func(t *testing.T, r []Row) []Row { r[4].PrevHash = strings.Repeat("1", 64); return r }, 5, verify.KindModified},
		{"body rewritten with a recomputed hash", func(t *testing.T, r []Row) []Row {
			r[5] = sealed(t, 6, r[4].Hash, "mallory")
			return r
		}, 6, verify.KindModified},
		{"body unreadable", func(t *testing.T, r []Row) []Row { r[2].Body = []byte("garbage"); return r }, 3, verify.KindModified},
		{"row deleted (gap)", func(t *testing.T, r []Row) []Row { return append(r[:4:4], r[5:]...) }, 5, verify.KindDeleted},
		{"rows deleted and renumbered", func(t *testing.T, r []Row) []Row {
			return renumber(append(r[:4:4], r[6:]...), 4, -2)
		}, 5, verify.KindDeleted},
		{"first row deleted", func(t *testing.T, r []Row) []Row { return r[1:] }, 1, verify.KindDeleted},
		{"row inserted, later rows shifted", func(t *testing.T, r []Row) []Row {
			forged := sealed(t, 6, r[4].Hash, "mallory")
			out := append(append(r[:5:5], forged), renumber(r[5:], 0, 1)...)
			return out
		}, 6, verify.KindInserted},
		{"two rows inserted, later rows shifted", func(t *testing.T, r []Row) []Row {
			f1 := sealed(t, 4, r[2].Hash, "mallory")
			f2 := sealed(t, 5, f1.Hash, "mallory")
			return append(append(r[:3:3], f1, f2), renumber(r[3:], 0, 2)...)
		}, 4, verify.KindInserted},
		{"row inserted with a bad link, later rows shifted", func(t *testing.T, r []Row) []Row {
			forged := sealed(t, 6, strings.Repeat("2", 64), "mallory")
			return append(append(r[:5:5], forged), renumber(r[5:], 0, 1)...)
		}, 6, verify.KindInserted},
		{"row appended without chaining", func(t *testing.T, r []Row) []Row {
			return append(r, sealed(t, n+1, strings.Repeat("3", 64), "mallory"))
		}, n + 1, verify.KindInserted},
		{"adjacent rows swapped", func(t *testing.T, r []Row) []Row {
			r[5], r[6] = r[6], r[5]
			r[5].Seq, r[6].Seq = 6, 7
			return r
		}, 6, verify.KindReordered},
		{"distant rows swapped", func(t *testing.T, r []Row) []Row {
			r[2], r[7] = r[7], r[2]
			r[2].Seq, r[7].Seq = 3, 8
			return r
		}, 3, verify.KindReordered},
		{"every row renumbered up", func(t *testing.T, r []Row) []Row { return renumber(r, 0, 2) }, 3, verify.KindRenumbered},
		{"later rows renumbered up, leaving a gap", func(t *testing.T, r []Row) []Row { return renumber(r, 4, 1) }, 6, verify.KindRenumbered},
		{"row moved past the end", func(t *testing.T, r []Row) []Row {
			moved := r[3]
			moved.Seq = n + 1
			return append(append(r[:3:3], r[4:]...), moved)
		}, 4, verify.KindReordered},
		{"first row replaced from another genesis", func(t *testing.T, r []Row) []Row {
			r[0] = sealed(t, 1, events.Genesis("another ledger"), "alice")
			return r
		}, 1, verify.KindModified},
		{"last body rewritten invalid, rehashed", func(t *testing.T, r []Row) []Row {
			body := bytes.Replace(r[n-1].Body, []byte(`"schema_version":1`), []byte(`"schema_version":7`), 1)
			r[n-1].Body, r[n-1].Hash = body, events.ChainHash(n, r[n-1].PrevHash, body)
			return r
		}, n, verify.KindSchema},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rows := tc.tamper(t, goodChain(t, n))
			rep := check(t, rows, genesis)
			if rep.OK || rep.FirstBad == nil {
				t.Fatalf("damage not found: %+v", rep)
			}
			if rep.FirstBad.Seq != tc.seq || rep.FirstBad.Kind != tc.kind {
				t.Fatalf("first bad = seq %d %s (%s), want seq %d %s\nall: %+v", rep.FirstBad.Seq, rep.FirstBad.Kind,
					rep.FirstBad.Detail, tc.seq, tc.kind, rep.Problems)
			}
			if rep.ProblemCount != 1 {
				t.Errorf("one act of damage gave %d findings: %+v", rep.ProblemCount, rep.Problems)
			}
		})
	}
}

func TestChainIntact(t *testing.T) {
	rows := goodChain(t, 20)
	rep := check(t, rows, events.Genesis(testLedgerID))
	if !rep.OK || rep.Events != 20 || rep.FirstSeq != 1 || rep.LastSeq != 20 || rep.HeadHash != rows[19].Hash {
		t.Fatalf("intact chain: %+v", rep)
	}
	// A row appended with a correct link is, by design, indistinguishable
	// from one the ledger appended: only a head recorded elsewhere shows it.
	rows = append(rows, sealed(t, 21, rows[19].Hash, "mallory"))
	if rep := check(t, rows, events.Genesis(testLedgerID)); !rep.OK {
		t.Fatalf("well-chained append: %+v", rep.Problems)
	}
}

func TestChainWrongGenesis(t *testing.T) {
	rep := check(t, goodChain(t, 5), events.Genesis("another ledger"))
	if rep.OK || rep.ProblemCount != 1 || rep.FirstBad.Seq != 1 || rep.FirstBad.Kind != verify.KindModified {
		t.Fatalf("wrong genesis: %+v", rep.Problems)
	}
}

func TestChainColumnMismatch(t *testing.T) {
	rows := goodChain(t, 5)
	for i := range rows {
		ev, err := DecodeEvent(rows[i].Seq, rows[i].Body)
		if err != nil {
			t.Fatal(err)
		}
		rows[i].Cols = &Columns{EventID: ev.EventID, Type: string(ev.Type), LockName: ev.LockName,
			RequestID: ev.RequestID, Actor: ev.Actor, At: ev.At}
	}
	rows[2].Cols.Actor = "mallory"
	rep := check(t, rows, events.Genesis(testLedgerID))
	if rep.FirstBad == nil || rep.FirstBad.Seq != 3 || rep.FirstBad.Kind != verify.KindColumnMismatch ||
		!strings.Contains(rep.FirstBad.Detail, "actor") {
		t.Fatalf("first bad: %+v", rep.FirstBad)
	}
}

func TestVerifyFileSlice(t *testing.T) {
	rows := goodChain(t, 8)
	var buf bytes.Buffer
	for i := 3; i < 8; i++ { // seq 4..8: a slice chains from its first prev_hash
		if err := WriteExportLine(&buf, &rows[i]); err != nil {
			t.Fatal(err)
		}
	}
	export := buf.String()
	rep, err := VerifyFile(strings.NewReader(export), "slice", "")
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || rep.FirstSeq != 4 || rep.LastSeq != 8 || rep.FirstPrevHash != rows[2].Hash {
		t.Fatalf("slice: %+v", rep)
	}
	// Anchored at the right and at a wrong predecessor.
	if rep, _ := VerifyFile(strings.NewReader(export), "slice", rows[2].Hash); !rep.OK {
		t.Fatalf("anchored: %+v", rep.Problems)
	}
	if rep, _ := VerifyFile(strings.NewReader(export), "slice", rows[1].Hash); rep.OK || rep.FirstBad.Seq != 4 {
		t.Fatalf("wrong anchor: %+v", rep)
	}
	// Re-indenting a line changes no value: still verifies.
	lines := strings.Split(strings.TrimSpace(export), "\n")
	lines[1] = strings.ReplaceAll(lines[1], `,"`, `, "`)
	if rep, _ := VerifyFile(strings.NewReader(strings.Join(lines, "\n")), "slice", ""); !rep.OK {
		t.Fatalf("re-spaced line: %+v", rep.Problems)
	}
	// A changed value fails at its seq; a malformed line is named by line.
	lines[2] = strings.Replace(lines[2], `"alice"`, `"mallory"`, 1)
	lines = append(lines, `{"not":"an export line"}`)
	rep, _ = VerifyFile(strings.NewReader(strings.Join(lines, "\n")), "slice", "")
	if rep.OK || rep.FirstBad.Seq != 6 || rep.FirstBad.Kind != verify.KindModified || rep.FirstBad.Line != 3 {
		t.Fatalf("edited slice: %+v", rep.FirstBad)
	}
	var malformed bool
	for _, p := range rep.Problems {
		malformed = malformed || (p.Kind == verify.KindMalformed && p.Line == 6)
	}
	if !malformed {
		t.Fatalf("malformed line not reported: %+v", rep.Problems)
	}
}

func TestWithLinks(t *testing.T) {
	for body, want := range map[string]string{
		`{"a":1}`: `{"a":1,"prev_hash":"p","hash":"h"}`,
		`{}`:      `{"prev_hash":"p","hash":"h"}`,
		`oops`:    `{"body":"oops","prev_hash":"p","hash":"h"}`,
	} {
		if got := string(withLinks([]byte(body), "p", "h")); got != want {
			t.Errorf("withLinks(%s) = %s, want %s", body, got, want)
		}
	}
	_ = fmt.Sprint()
}
