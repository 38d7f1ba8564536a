package replay_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/schema"
	"github.com/lockledger/lockledger/verify"
)

// vfExport is a genuine export of a short ledger: acquire, heartbeat,
// blocked, steal, release; returned with the genesis it chains from.
func vfExport(tb testing.TB) ([]byte, string) {
	tb.Helper()
	genesis := events.Genesis("fuzz-ledger")
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	prevRec := events.Record{LockVersion: "v1", LockName: "deploy", RequestID: "req_a", Actor: "ci", HostID: "h", PID: 7,
		CreatedAt: "2026-01-02T03:04:06Z", LastHeartbeatAt: "2026-01-02T03:04:07Z", TTLSeconds: 60, Metadata: map[string]string{}}
	steps := []struct {
		typ     events.Type
		req     string
		payload any
	}{
		{events.LockAcquired, "req_a", &events.Acquired{TTLSeconds: 60, FencingToken: 1, Metadata: map[string]string{"k": "v"}}},
		{events.LockHeartbeat, "req_a", &events.Heartbeat{}},
		{events.AcquireBlocked, "req_b", &events.Blocked{HeldBy: new(events.HolderOf(prevRec)), State: "held"}},
		{events.LockStolen, "req_b", &events.Stolen{Acquired: events.Acquired{TTLSeconds: 60, FencingToken: 4,
			Metadata: map[string]string{}}, PreviousLock: prevRec, PreviousLockHash: events.LockFileHash(prevRec.File()), Reason: events.ReasonForcedActive}},
		{events.LockReleased, "req_b", &events.Released{HeldDurationSeconds: 1.5, Result: events.ResultSuccess, FencingToken: 4}},
	}
	var buf bytes.Buffer
	prev := genesis
	for i, s := range steps {
		at = at.Add(time.Second)
		ev := &events.Event{Envelope: events.Envelope{EventID: events.NewULID(at), Seq: int64(i + 1), Type: s.typ,
			SchemaVersion: events.SchemaVersion, At: events.FormatTime(at), LockName: "deploy", RequestID: s.req,
			Actor: "ci", HostID: "h", PID: 7}, Payload: s.payload, PrevHash: prev}
		if err := ev.Seal(); err != nil {
			tb.Fatal(err)
		}
		if err := replay.WriteExportLine(&buf, &replay.Row{Seq: ev.Seq, PrevHash: ev.PrevHash, Hash: ev.Hash, Body: ev.Body}); err != nil {
			tb.Fatal(err)
		}
		prev = ev.Hash
	}
	return buf.Bytes(), genesis
}

// vfLine is an export line as an independent reader sees it.
type vfLine struct {
	Seq      *int64          `json:"seq"`
	PrevHash *string         `json:"prev_hash"`
	Hash     *string         `json:"hash"`
	Body     json.RawMessage `json:"body"`
}

// vfRecheck re-verifies a file that VerifyFile called OK, without replay's
// code: every line chains, seqs are contiguous, every body is schema-valid
// and carries its line's seq. It returns what is wrong ("" if nothing).
func vfRecheck(data []byte, anchor string) (string, int64, string) {
	var n int64
	var prevSeq int64
	prev := anchor
	for _, raw := range bytes.Split(data, []byte("\n")) {
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			continue
		}
		var l vfLine
		if err := json.Unmarshal(raw, &l); err != nil || l.Seq == nil || l.PrevHash == nil || l.Hash == nil || len(l.Body) == 0 {
			return "line is not an export line: " + string(raw), n, prev
		}
		body, err := events.Canonical(l.Body)
		if err != nil {
			return "body is not JSON", n, prev
		}
		if events.ChainHash(*l.Seq, *l.PrevHash, body) != *l.Hash {
			return "hash does not match", n, prev
		}
		if n > 0 && (*l.Seq != prevSeq+1 || *l.PrevHash != prev) {
			return "seq or link broken", n, prev
		}
		if n == 0 && anchor != "" && *l.PrevHash != anchor {
			return "first line does not chain from the anchor", n, prev
		}
		var env struct {
			Type events.Type `json:"type"`
			Seq  *int64      `json:"seq"`
		}
		if err := json.Unmarshal(body, &env); err != nil || env.Seq == nil || *env.Seq != *l.Seq {
			return "body seq differs from the line's seq", n, prev
		}
		if err := schema.ValidateEvent(env.Type, body); err != nil {
			return "schema: " + err.Error(), n, prev
		}
		n++
		prevSeq, prev = *l.Seq, *l.Hash
	}
	return "", n, prev
}

func FuzzVerifyFile(f *testing.F) {
	good, genesis := vfExport(f)
	lines := bytes.SplitAfter(good, []byte("\n"))
	join := func(ls ...[]byte) []byte { return bytes.Join(ls, nil) }
	f.Add(good, "")
	f.Add(good, genesis)
	f.Add(good, strings.Repeat("0", 64))
	f.Add(join(lines[0], lines[1], lines[3], lines[4]), "")                           // deleted
	f.Add(join(lines[0], lines[2], lines[1], lines[3], lines[4]), "")                 // reordered
	f.Add(join(lines[1], lines[2], lines[3], lines[4]), "")                           // a slice
	f.Add(bytes.Replace(good, []byte(`"actor":"ci"`), []byte(`"actor":"cj"`), 1), "") // modified
	f.Add(bytes.ReplaceAll(good, []byte("\n"), []byte("\r\n")), genesis)
	f.Add(join(lines[0], []byte("\n\n   \n"), lines[1]), "")
	f.Add(good[:len(good)/2], "")
	f.Add(append(append([]byte{}, good...), []byte("{\"seq\":6}\ngarbage\n")...), "")
	f.Add([]byte(""), "")
	f.Add([]byte("\x00\xff{"), "")
	f.Add([]byte(`{"seq":1,"prev_hash":"","hash":"","body":"not an object"}`), "")
	f.Add([]byte(`{"seq":1.5,"prev_hash":1,"hash":null,"body":{}}`), "")
	f.Fuzz(func(t *testing.T, data []byte, anchor string) {
		rep, err := replay.VerifyFile(bytes.NewReader(data), "fuzz.jsonl", anchor) // must never panic
		if err != nil {
			return
		}
		if rep == nil {
			t.Fatal("VerifyFile returned neither a report nor an error")
		}
		if !rep.OK {
			if rep.ProblemCount == 0 || rep.FirstBad == nil {
				t.Fatalf("report not OK but names no problem: %+v", rep)
			}
			return
		}
		if rep.ProblemCount != 0 {
			t.Fatalf("report OK with %d problems", rep.ProblemCount)
		}
		why, n, head := vfRecheck(data, anchor)
		if n == 0 && why == "" {
			t.Fatalf("a file without an event is accepted\ninput: %q", data)
		}
		if why == "hash does not match" && vfRenumbered(data) {
			t.Fatalf("a line whose seq differs from the seq its hash covers is accepted (see TestVerifyFileRejectsRenumberedLines)\ninput: %q", data)
		}
		if why != "" {
			t.Fatalf("VerifyFile says OK, an independent check says %s\ninput: %q", why, data)
		}
		if rep.Events != n || (n > 0 && rep.HeadHash != head) {
			t.Fatalf("VerifyFile OK with %d events, head %s; recheck counts %d, head %s", rep.Events, rep.HeadHash, n, head)
		}
	})
}

// vfRenumbered reports a file in which some line's hash matches its body's
// own seq but not the line's seq: the line was renumbered.
func vfRenumbered(data []byte) bool {
	for _, raw := range bytes.Split(data, []byte("\n")) {
		var l vfLine
		if json.Unmarshal(bytes.TrimSpace(raw), &l) != nil || l.Seq == nil || l.PrevHash == nil || l.Hash == nil {
			continue
		}
		body, err := events.Canonical(l.Body)
		var env struct {
			Seq int64 `json:"seq"`
		}
		if err != nil || json.Unmarshal(body, &env) != nil {
			continue
		}
		if env.Seq != *l.Seq && events.ChainHash(env.Seq, *l.PrevHash, body) == *l.Hash {
			return true
		}
	}
	return false
}

// TestVerifyFileRejectsRenumberedLines: found by FuzzVerifyFile. Each
// line's hash covers the seq the event was written with, so relabelling
// lines is visible line by line, anchored or not: events 1-3 relabelled
// seq 3-5 once passed as "seq 3-5", even anchored at the genesis.
func TestVerifyFileRejectsRenumberedLines(t *testing.T) {
	good, genesis := vfExport(t)
	lines := bytes.Split(bytes.TrimSpace(good), []byte("\n"))
	relabel := func(pick []int, first int) []byte {
		var out bytes.Buffer
		for i, n := range pick {
			out.Write(bytes.Replace(lines[n-1], []byte(fmt.Sprintf(`{"seq":%d,`, n)), []byte(fmt.Sprintf(`{"seq":%d,`, first+i)), 1))
			out.WriteByte('\n')
		}
		return out.Bytes()
	}
	for _, c := range []struct {
		name     string
		data     []byte
		anchor   string
		line     int64
		seq      int64
		kind     verify.Kind
		problems int
	}{
		{"events 1-3 as seq 3-5", relabel([]int{1, 2, 3}, 3), "", 1, 3, verify.KindRenumbered, 1},
		{"events 1-3 as seq 3-5, anchored at the genesis", relabel([]int{1, 2, 3}, 3), genesis, 1, 3, verify.KindRenumbered, 1},
		{"events 3-5 as seq 1-3", relabel([]int{3, 4, 5}, 1), "", 1, 1, verify.KindRenumbered, 1},
		{"events 3-5 as seq 1-3, anchored at the genesis", relabel([]int{3, 4, 5}, 1), genesis, 1, 1, verify.KindRenumbered, 2},
		{"events 3-5 relabelled after a jump", append(relabel([]int{1, 2}, 1), relabel([]int{3, 4, 5}, 7)...), genesis, 3, 7, verify.KindRenumbered, 1},
	} {
		rep, err := replay.VerifyFile(bytes.NewReader(c.data), "renumbered.jsonl", c.anchor)
		if err != nil {
			t.Fatal(err)
		}
		if rep.OK || rep.FirstBad == nil {
			t.Errorf("%s: accepted as seq %d-%d", c.name, rep.FirstSeq, rep.LastSeq)
			continue
		}
		if fb := rep.FirstBad; fb.Line != c.line || fb.Seq != c.seq || fb.Kind != c.kind || rep.ProblemCount != c.problems {
			t.Errorf("%s: first bad line %d seq %d %s (%s), %d problems; want line %d seq %d %s, %d problems\nall: %+v",
				c.name, fb.Line, fb.Seq, fb.Kind, fb.Detail, rep.ProblemCount, c.line, c.seq, c.kind, c.problems, rep.Problems)
		}
	}
}

// TestVerifyFileSeedsAreJudgedRight pins the seeds' expected verdicts, so
// that the fuzz target's oracle is known to see both outcomes.
func TestVerifyFileSeedsAreJudgedRight(t *testing.T) {
	good, genesis := vfExport(t)
	for _, c := range []struct {
		name   string
		data   []byte
		anchor string
		ok     bool
	}{
		{"genuine", good, genesis, true},
		{"genuine, no anchor", good, "", true},
		{"wrong anchor", good, strings.Repeat("0", 64), false},
		{"modified", bytes.Replace(good, []byte(`"actor":"ci"`), []byte(`"actor":"cj"`), 1), "", false},
	} {
		rep, err := replay.VerifyFile(bytes.NewReader(c.data), c.name, c.anchor)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if rep.OK != c.ok {
			t.Errorf("%s: OK=%v, want %v (%+v)", c.name, rep.OK, c.ok, rep.FirstBad)
		}
		if why, _, _ := vfRecheck(c.data, c.anchor); (why == "") != c.ok {
			t.Errorf("%s: the independent recheck says %q", c.name, why)
		}
	}
}
