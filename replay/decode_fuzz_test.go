package replay

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/lockledger/lockledger/events"
)

// decodeSeeds are canonical bodies of every type, as the ledger writes them.
func decodeSeeds(tb testing.TB) [][]byte {
	tb.Helper()
	at := time.Date(2026, 3, 4, 5, 6, 7, 891011121, time.UTC)
	prev := events.Record{LockVersion: "v1", LockName: "deploy", RequestID: "req_a", Actor: "ci", Intent: "deploy",
		IntentVersion: "2", HostID: "h", PID: 7, CreatedAt: "2026-01-02T03:04:06Z", LastHeartbeatAt: "2026-01-02T03:04:07Z",
		TTLSeconds: 60, Metadata: map[string]string{"ticket": "OPS-1", "ünï": "cödé"}}
	exit := 2
	holder := events.HolderOf(prev)
	acq := events.Acquired{TTLSeconds: 60, Intent: "deploy", IntentVersion: "1", FencingToken: 1,
		Metadata: map[string]string{"k": "v"}, PIDStart: "99", BootID: "b"}
	tgt := acq
	tgt.Targets = []events.Target{{Format: "bso", Path: "/x"}, {Format: "beads", Path: "/y/z"}}
	sem := acq
	sem.Mode, sem.Limit = events.ModeShared, 3
	payloads := []struct {
		typ events.Type
		p   any
	}{
		{events.LockAcquired, &acq},
		{events.LockAcquired, &tgt},
		{events.LockAcquired, &sem},
		{events.LockStolen, &events.Stolen{Acquired: sem, PreviousLock: prev, PreviousLockHash: events.LockFileHash(prev.File()),
			Reason: events.ReasonHolderDead}},
		{events.AcquireBlocked, &events.Blocked{HeldBy: new(events.HolderOf(prev)), State: "held", Mode: events.ModeShared, Limit: 2}},
		{events.LockHeartbeat, &events.Heartbeat{}},
		{events.LockStolen, &events.Stolen{Acquired: tgt, PreviousLock: prev, PreviousLockHash: events.LockFileHash(prev.File()),
			Reason: events.ReasonHolderDead, Note: "n"}},
		{events.LockReleased, &events.Released{HeldDurationSeconds: 1.25, Result: "failure", FailureStep: "s",
			ExitCode: &exit, Forced: true, ReleasedRequestID: "req_b", FencingToken: 3}},
		{events.LockReleased, &events.Released{HeldDurationSeconds: 1e-7, Result: "success"}},
		{events.HeartbeatFailed, &events.HeartbeatFailedPayload{ConsecutiveFailures: 3, Error: "busy", LockLost: true}},
		{events.AcquireBlocked, &events.Blocked{HeldBy: new(events.HolderOf(prev)), State: "stale", WaitedSeconds: 12.5, Foreign: true}},
		{events.LockStolen, &events.Stolen{Acquired: acq, PreviousLock: prev, PreviousLockHash: events.LockFileHash(prev.File()),
			Reason: events.ReasonReclaimed}},
		{events.LockReleased, &events.Released{HeldDurationSeconds: 30, Result: "cancelled", Forced: true,
			ReleasedRequestID: "req_a", FencingToken: 1, DisplacedBy: &holder, DisplacedByFormat: "bso",
			DisplacedByPath: "/srv/app/.bso.lock"}},
		{events.ActionRefused, &events.Refused{Action: events.ActionRelease, Error: "not the holder", State: "held",
			HeldBy: &holder}},
		{events.ActionRefused, &events.Refused{Action: events.ActionHeartbeat, Error: "never held"}},
		{events.AcquireBlocked, &events.Blocked{UnreadableFile: &events.UnreadableFile{Path: "/r/locks/deploy.lock", SizeBytes: 37,
			Modified: "2026-03-04T05:06:07Z"}, State: "held", Foreign: true}},
		{events.ActionRefused, &events.Refused{Action: events.ActionSteal, Error: "held by an unreadable lock file", State: "held",
			UnreadableFile: &events.UnreadableFile{Path: "/r/locks/deploy.lock", Modified: "2026-03-04T05:06:07Z"}}},
		{events.LockProjected, &events.Projected{Changes: []string{"lock file restored", "ünï row"},
			MovedAside: "/r/locks/deploy.lock.corrupt-20260304T050607Z", BrokenChainAccepted: true, FirstBadSeq: 12}},
		{events.LockProjected, &events.Projected{Changes: []string{"x"}}},
		{events.JobProcesses, &events.JobProcessesPayload{JobRequestID: "req_a", PIDs: []int{10, 11, 1 << 40},
			Action: events.JobKilled, Note: "left the process group"}},
		{events.JobProcesses, &events.JobProcessesPayload{JobRequestID: "req_a", PIDs: []int{5}, Action: events.JobLeftRunning}},
		{events.LedgerExported, &events.Exported{Since: "2026-03-04T00:00:00.000000000Z", Until: "2026-03-05T00:00:00.000000000Z",
			FirstSeq: 2, LastSeq: 9, Events: 8, Format: "csv", Destination: "/srv/é/audit.csv"}},
		{events.LedgerExported, &events.Exported{Format: "jsonl", Destination: events.DestinationStdout}},
		{events.LedgerVerified, &events.Verified{Result: events.AuditFailed, Events: 9, Problems: 2, FirstBadSeq: 4,
			FirstSeq: 1, LastSeq: 9, HeadHash: strings.Repeat("ab", 32), File: "/tmp/x.jsonl"}},
		{events.LedgerVerified, &events.Verified{Result: events.AuditOK}},
		{events.LedgerProjected, &events.LedgerProjectedPayload{Result: events.AuditOK, Events: 12, Locks: 3, RowsChanged: 1,
			FilesChanged: 2, Problems: 1, BrokenChainAccepted: true, FirstBadSeq: 5}},
		{events.LedgerProjected, &events.LedgerProjectedPayload{Result: events.AuditRefused, Events: 12, Locks: 3}},
	}
	var out [][]byte
	for i, p := range payloads {
		env := events.Envelope{EventID: events.NewULID(at), Seq: int64(i + 1), Type: p.typ,
			SchemaVersion: 1, At: events.FormatTime(at), LockName: "deploy", RequestID: "req_a", Actor: "ci",
			HostID: "h", PID: 42}
		if p.typ.LedgerWide() {
			env.LockName = ""
		}
		// Every other body as written before uid and user were recorded;
		// one with an unnamed uid.
		switch i % 3 {
		case 0:
			env.SetOSUser(1000, "ci")
		case 1:
			env.SetOSUser(0, "")
		}
		b, err := events.BuildBody(env, p.p)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// decodeMutations: what json.Unmarshal treats in its own ways.
func decodeMutations(b []byte) [][]byte {
	s := string(b)
	cut := s[:len(s)-1]
	muts := []string{
		cut + `,"seq":5}`, cut + `,"Seq":5}`, cut + `,"SEQ":"x"}`, cut + `,"unknown":[1,{"a":null}]}`,
		cut + `,"metadata":{"z":"1"}}`, cut + `,"metadata":null}`, cut + `,"metadata":{"k":1}}`,
		cut + `,"previous_lock":{"pid":9}}`, cut + `,"held_by":{"pid":1}}`, cut + `,"held_by":null}`,
		cut + `,"unreadable_file":{"size_bytes":1}}`, cut + `,"unreadable_file":null}`, cut + `,"unreadable_file":{"Path":"/p","path":"/q"}}`,
		cut + `,"exit_code":null}`, cut + `,"exit_code":1.0}`, cut + `,"exit_code":1e2}`, cut + `,"targets":[]}`,
		cut + `,"targets":null}`, cut + `,"mode":"shared"}`, cut + `,"limit":2.0}`, cut + `,"Limit":3}`, cut + `,"mode":null}`, cut + `,"targets":[{"format":"x","Path":"/p"}]}`, cut + `,"forced":"true"}`,
		cut + `,"waited_seconds":1e400}`, cut + `,"waited_seconds":1e-400}`, cut + `,"waited_seconds":-0}`,
		cut + `,"held_duration_seconds":0.1e1}`, cut + `,"pid":9223372036854775807}`, cut + `,"pid":9223372036854775808}`,
		cut + `,"pid":-9223372036854775808}`, cut + `,"pid":-0}`, cut + `,"pid":01}`, cut + `,"seq":null}`,
		cut + `,"actor":"a\u0062c"}`, cut + `,"actor":"\ud800"}`, cut + "\"actor\":\"\xff\"}", cut + `,"actor":"é"}`,
		cut + `,"actor":1}`, cut + `,"type":"x"}`,
		cut + `,"uid":7}`, cut + `,"uid":null}`, cut + `,"uid":"7"}`, cut + `,"uid":7.0}`, cut + `,"uid":-1}`,
		cut + `,"uid":9223372036854775808}`, cut + `,"user":"é"}`, cut + `,"user":null}`, cut + `,"user":1}`,
		cut + `,"UID":3}`, cut + `,"uid":1,"user":"a","uid":2}`,
		cut + `,"events":-1}`, cut + `,"events":1.5}`, cut + `,"events":null}`, cut + `,"problems":9223372036854775808}`,
		cut + `,"head_hash":null}`, cut + `,"format":1}`, cut + `,"destination":"\/x"}`, cut + `,"locks":"1"}`,
		cut + `,"rows_changed":1e1}`, cut + `,"files_changed":true}`, cut + `,"first_seq":-0}`, cut + `,"since":"x"}`,
		cut + `,"Events":3}`, cut + `,"file":"/a","file":"/b"}`,
		cut + `,"changes":[]}`, cut + `,"changes":null}`, cut + `,"changes":["a" , "b"]}`, cut + `,"changes":["a",]}`,
		cut + `,"changes":["a",1]}`, cut + `,"changes":["a"]}`, cut + `,"changes":[null]}`, cut + `,"changes":"a"}`,
		cut + `,"changes":["a"],"changes":["b","c"]}`, cut + `,"pids":[]}`, cut + `,"pids":null}`, cut + `,"pids":[ 1 ,2 ]}`,
		cut + `,"pids":[1.0]}`, cut + `,"pids":[1e2]}`, cut + `,"pids":[9223372036854775808]}`, cut + `,"pids":[-1,0]}`,
		cut + `,"pids":[null]}`, cut + `,"pids":["1"]}`, cut + `,"pids":[1],"pids":[2,3]}`, cut + `,"Pids":[4]}`,
		cut + `,"superseded_by":{"pid":1}}`, cut + `,"superseded_by":null}`, cut + `,"action":"x"}`, cut + `,"first_bad_seq":1.5}`,
		cut + `,"broken_chain_accepted":1}`, cut + `,"job_request_id":null}`, cut + `,"moved_aside":"/é"}`, cut + "\t,\n\"pid\" : 3 }", s + " ", s + "x", s + "}", " " + s,
		strings.Replace(s, `"seq"`, `"se\u0071"`, 1), strings.Replace(s, `:`, ` : `, -1),
		`null`, `{}`, `[]`, `1`, `"x"`, `{"seq":1}`, `{"seq":1,}`, ``, `{`,
	}
	out := make([][]byte, len(muts))
	for i, m := range muts {
		out[i] = []byte(m)
	}
	return out
}

// checkDecodeFast: when decodeFast takes a body, json.Unmarshal decodes it
// without error into the same Event.
func checkDecodeFast(t *testing.T, body []byte) bool {
	t.Helper()
	fast, ok := decodeFast(body)
	if !ok {
		return false
	}
	var ref Event
	if err := json.Unmarshal(body, &ref); err != nil {
		t.Fatalf("decodeFast takes %q, json.Unmarshal refuses it: %v", body, err)
	}
	if !reflect.DeepEqual(*fast, ref) {
		t.Fatalf("decodeFast and json.Unmarshal differ on %q:\nfast %+v\nref  %+v", body, *fast, ref)
	}
	return true
}

func TestDecodeFastMatchesUnmarshal(t *testing.T) {
	for _, b := range decodeSeeds(t) {
		// The ledger's own bodies take the fast path: that is its point.
		if !checkDecodeFast(t, b) {
			t.Errorf("a canonical body falls back to json.Unmarshal: %s", b)
		}
		for _, m := range decodeMutations(b) {
			checkDecodeFast(t, m)
		}
	}
}

func FuzzDecodeFast(f *testing.F) {
	for _, b := range decodeSeeds(f) {
		f.Add(b)
		for _, m := range decodeMutations(b) {
			f.Add(m)
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkDecodeFast(t, body)
	})
}

func BenchmarkDecodeFast(b *testing.B) {
	seeds := decodeSeeds(b)
	for _, name := range []string{"acquired", "heartbeat", "stolen", "released", "blocked"} {
		var body []byte
		for _, s := range seeds {
			if strings.Contains(string(s), `"type":"lock_`+name) || strings.Contains(string(s), `"type":"acquire_`+name) {
				body = s
				break
			}
		}
		if body == nil {
			continue
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := decodeFast(body); !ok {
					b.Fatal("slow path")
				}
			}
		})
	}
}

// decodeFast is decodeFastString of a body held as bytes, into a new Event.
func decodeFast(body []byte) (*Event, bool) {
	ev := &Event{}
	if !decodeFastString(unsafe.String(unsafe.SliceData(body), len(body)), ev) {
		return nil, false
	}
	return ev, true
}
