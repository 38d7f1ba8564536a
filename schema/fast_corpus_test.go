package schema_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/schema"
	"github.com/lockledger/lockledger/schema/reference"
)

// allTypes is every schema ValidateEvent answers for: every event type
// and the lock file.
var allTypes = append(append([]events.Type{}, events.Types...), events.Type(schema.LockFile))

// refValidate is reference.ValidateEvent, with a panic reported as such.
// (The library panics on numbers math/big refuses to expand, e.g.
// 1e1000001; reference.Validate turns that into a refusal, but a panic
// that got through must still be a refusal of schema.ValidateEvent's.)
func refValidate(t events.Type, body []byte) (err error, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			err, panicked = fmt.Errorf("library panic: %v", r), true
		}
	}()
	return reference.ValidateEvent(t, body), false
}

// sameVerdict compares the two validators on one body and schema.
func sameVerdict(tb testing.TB, typ events.Type, body []byte) {
	tb.Helper()
	ref, panicked := refValidate(typ, body)
	fast := schema.ValidateEvent(typ, body)
	if fast != nil && !isSchemaError(fast) {
		tb.Fatalf("%s: ValidateEvent error %v (%T) is not a *schema.Error wrapping ErrSchema", typ, fast, fast)
	}
	if panicked {
		if fast == nil {
			tb.Fatalf("%s: the library panics (%v) but ValidateEvent accepts\nbody: %q", typ, ref, body)
		}
		return
	}
	if (ref == nil) != (fast == nil) {
		tb.Fatalf("%s: the library says %v, ValidateEvent says %v\nbody: %q", typ, ref, fast, body)
	}
}

func isSchemaError(err error) bool {
	se, ok := err.(*schema.Error)
	return ok && se.Unwrap() == schema.ErrSchema
}

// seedBody is one valid body and the schema it satisfies.
type seedBody struct {
	name string
	typ  events.Type
	body []byte
	// cross: check against every schema, not only typ's (valid bodies
	// and text-level damage; a field mutation is checked as its type).
	cross bool
	// full: the richest seed of its schema, whose every field mutates
	// (the others get the text-level damage only).
	full bool
}

func mustBody(tb testing.TB, env events.Envelope, payload any) []byte {
	tb.Helper()
	b, err := events.BuildBody(env, payload)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// validSeeds builds a valid body of every type, several for the types with
// optional parts, with events.BuildBody and the payload structs.
func validSeeds(tb testing.TB) []seedBody {
	tb.Helper()
	at := time.Date(2026, 11, 22, 22, 23, 54, 861197406, time.UTC)
	// Every seed records the writing process's uid and user, as the
	// ledger writes them now; the "(before uid)" seeds are bodies written
	// before they were recorded.
	env := func(typ events.Type, seq int64, req string) events.Envelope {
		at = at.Add(time.Second)
		e := events.Envelope{EventID: events.NewULID(at), Seq: seq, Type: typ, SchemaVersion: events.SchemaVersion,
			At: events.FormatTime(at), LockName: "deploy-prod", RequestID: req, Actor: "ci-bot", HostID: "host-a", PID: 4242}
		e.SetOSUser(1000, "ci")
		return e
	}
	old := func(e events.Envelope) events.Envelope {
		e.UID, e.User = nil, nil
		return e
	}
	prev := events.Record{LockVersion: events.LockVersion, LockName: "deploy-prod", RequestID: "req_old", Actor: "alice",
		Intent: "deploy", IntentVersion: "3", HostID: "host-b", PID: 77, CreatedAt: "2026-11-22T22:00:00Z",
		LastHeartbeatAt: "2026-11-22T22:10:00Z", TTLSeconds: 900, Metadata: map[string]string{"ticket": "OPS-1", "é": "ü"}}
	acq := events.Acquired{TTLSeconds: 900, Intent: "deploy", IntentVersion: "1", FencingToken: 12,
		Metadata: map[string]string{"k": "v", "empty": ""}, PIDStart: "123456", BootID: "boot-1"}
	withTargets := acq
	withTargets.Targets = []events.Target{{Format: "tower-fleet", Path: "/srv/locks/a.lock"}, {Format: "bso", Path: "/tmp/x"}}
	withTargets.Note = "a steal that found the lock free"
	exit := 3
	zero := 0
	holderPrev := events.HolderOf(prev)
	var out []seedBody
	add := func(name string, typ events.Type, b []byte) {
		out = append(out, seedBody{name: name, typ: typ, body: b, cross: true})
	}
	full := func() { out[len(out)-1].full = true }
	add("acquired", events.LockAcquired, mustBody(tb, env(events.LockAcquired, 1, "req_a"), &acq))
	add("acquired+targets", events.LockAcquired, mustBody(tb, env(events.LockAcquired, 2, "req_a"), &withTargets))
	full()
	shared := acq
	shared.Mode, shared.Limit = events.ModeShared, 3
	add("acquired shared limit", events.LockAcquired, mustBody(tb, env(events.LockAcquired, 2, "req_s"), &shared))
	full()
	add("stolen shared slot", events.LockStolen, mustBody(tb, env(events.LockStolen, 6, "req_t"), &events.Stolen{Acquired: shared,
		PreviousLock: prev, PreviousLockHash: events.LockFileHash(prev.File()), Reason: events.ReasonHolderDead}))
	full()
	waited := withTargets
	waited.WaitedSeconds = 12.5
	add("acquired after a wait", events.LockAcquired, mustBody(tb, env(events.LockAcquired, 2, "req_w"), &waited))
	full()
	noProcess := env(events.LockAcquired, 2, "req_n")
	noProcess.PID = 0
	add("acquired, no holder process", events.LockAcquired, mustBody(tb, noProcess, &acq))
	noMeta := acq
	noMeta.Metadata = map[string]string{}
	noMeta.Intent, noMeta.IntentVersion, noMeta.PIDStart, noMeta.BootID = "", "", "", ""
	add("acquired minimal", events.LockAcquired, mustBody(tb, env(events.LockAcquired, 3, "r"), &noMeta))
	add("acquired (before uid)", events.LockAcquired, mustBody(tb, old(env(events.LockAcquired, 3, "r")), &acq))
	rootEnv := env(events.LockHeartbeat, 4, "req_a")
	rootEnv.SetOSUser(0, "root")
	add("heartbeat by root", events.LockHeartbeat, mustBody(tb, rootEnv, &events.Heartbeat{}))
	unnamed := env(events.LockHeartbeat, 4, "req_a")
	unnamed.SetOSUser(4294967295, "")
	add("heartbeat by an unnamed uid", events.LockHeartbeat, mustBody(tb, unnamed, &events.Heartbeat{}))
	add("heartbeat (before uid)", events.LockHeartbeat, mustBody(tb, old(env(events.LockHeartbeat, 4, "req_a")), &events.Heartbeat{}))
	add("heartbeat", events.LockHeartbeat, mustBody(tb, env(events.LockHeartbeat, 4, "req_a"), &events.Heartbeat{}))
	full()
	add("stolen", events.LockStolen, mustBody(tb, env(events.LockStolen, 5, "req_b"), &events.Stolen{Acquired: acq,
		PreviousLock: prev, PreviousLockHash: events.LockFileHash(prev.File()), Reason: events.ReasonStaleForced}))
	add("stolen+targets+note", events.LockStolen, mustBody(tb, env(events.LockStolen, 6, "req_c"), &events.Stolen{Acquired: withTargets,
		PreviousLock: prev, PreviousLockHash: events.LockFileHash(prev.File()), Reason: events.ReasonForcedActive, Note: "incident 42"}))
	full()
	foreign := prev
	foreign.Metadata = map[string]string{}
	foreign.RequestID = "foreign:xyz"
	add("stolen foreign", events.LockStolen, mustBody(tb, env(events.LockStolen, 7, "req_d"), &events.Stolen{Acquired: acq,
		PreviousLock: foreign, PreviousLockHash: events.LockFileHash(foreign.File()), Reason: events.ReasonForeignLock}))
	add("released", events.LockReleased, mustBody(tb, env(events.LockReleased, 8, "req_a"), &events.Released{
		HeldDurationSeconds: 12.345, Result: events.ResultSuccess, FencingToken: 12}))
	add("released (before uid)", events.LockReleased, mustBody(tb, old(env(events.LockReleased, 8, "req_a")), &events.Released{
		HeldDurationSeconds: 12.345, Result: events.ResultSuccess, FencingToken: 12}))
	add("released failure", events.LockReleased, mustBody(tb, env(events.LockReleased, 9, "req_a"), &events.Released{
		HeldDurationSeconds: 0, Result: events.ResultFailure, FailureStep: "migrate", ExitCode: &exit, FencingToken: 12}))
	add("released forced", events.LockReleased, mustBody(tb, env(events.LockReleased, 10, "req_z"), &events.Released{
		HeldDurationSeconds: 3600, Result: events.ResultCancelled, ExitCode: &zero, Forced: true, ReleasedRequestID: "req_a"}))
	add("released forced, result forced", events.LockReleased, mustBody(tb, env(events.LockReleased, 10, "req_z"), &events.Released{
		HeldDurationSeconds: 60, Result: events.ResultForced, Forced: true, ReleasedRequestID: "req_a", FencingToken: 9,
		Note: "INC-43: runner gone"}))
	add("released everything", events.LockReleased, mustBody(tb, env(events.LockReleased, 10, "req_z"), &events.Released{
		HeldDurationSeconds: 7.5, Result: events.ResultFailure, FailureStep: "deploy", ExitCode: &exit, Forced: true,
		ReleasedRequestID: "req_a", FencingToken: 9, DisplacedBy: &holderPrev, DisplacedByFormat: "prodigy",
		DisplacedByPath: "/srv/app/.prodigy/resume.lock", Note: "INC-42: runner gone"}))
	full()
	add("released displaced", events.LockReleased, mustBody(tb, env(events.LockReleased, 10, "req_z"), &events.Released{
		HeldDurationSeconds: 60, Result: events.ResultCancelled, Forced: true, ReleasedRequestID: "req_a",
		DisplacedBy: &events.Holder{RequestID: "foreign:bso", PID: 0}, DisplacedByFormat: "bso", DisplacedByPath: "/x"}))
	add("heartbeat_failed", events.HeartbeatFailed, mustBody(tb, env(events.HeartbeatFailed, 11, "req_a"), &events.HeartbeatFailedPayload{
		ConsecutiveFailures: 3, Error: "database is locked", LockLost: true}))
	full()
	add("blocked", events.AcquireBlocked, mustBody(tb, env(events.AcquireBlocked, 12, "req_e"), &events.Blocked{
		HeldBy: new(events.HolderOf(prev)), State: events.StateHeld, WaitedSeconds: 1.5}))
	holder := events.HolderOf(prev)
	holder.Intent = ""
	add("blocked foreign", events.AcquireBlocked, mustBody(tb, env(events.AcquireBlocked, 13, "req_f"), &events.Blocked{
		HeldBy: &holder, State: events.StateStale, WaitedSeconds: 0, Foreign: true}))
	add("blocked everything", events.AcquireBlocked, mustBody(tb, env(events.AcquireBlocked, 14, "req_g"), &events.Blocked{
		HeldBy: new(events.HolderOf(prev)), State: events.StateDead, WaitedSeconds: 30, Foreign: true}))
	full()
	add("blocked shared", events.AcquireBlocked, mustBody(tb, env(events.AcquireBlocked, 14, "req_g"), &events.Blocked{
		HeldBy: new(events.HolderOf(prev)), State: events.StateHeld, WaitedSeconds: 2, Mode: events.ModeShared, Limit: 2}))
	unreadable := &events.UnreadableFile{Path: "/srv/locks/deploy-prod.lock", SizeBytes: 37, Modified: "2026-11-22T22:23:54Z"}
	add("blocked by an unreadable file", events.AcquireBlocked, mustBody(tb, env(events.AcquireBlocked, 14, "req_g"), &events.Blocked{
		UnreadableFile: unreadable, State: events.StateHeld, WaitedSeconds: 0, Foreign: true}))
	full()
	add("blocked by an empty unreadable file", events.AcquireBlocked, mustBody(tb, env(events.AcquireBlocked, 14, "req_g"), &events.Blocked{
		UnreadableFile: &events.UnreadableFile{Path: "/x", Modified: "2026-11-22T22:23:54.5+01:00"}, State: events.StateHeld, WaitedSeconds: 1}))
	add("blocked by nothing named", events.AcquireBlocked, mustBody(tb, env(events.AcquireBlocked, 14, "req_g"), &events.Blocked{
		State: events.StateHeld, WaitedSeconds: 1}))
	full()
	add("refused release", events.ActionRefused, mustBody(tb, env(events.ActionRefused, 15, "req_h"), &events.Refused{
		Action: events.ActionRelease, Error: "not the holder: deploy-prod is held by req_old", State: events.StateHeld,
		HeldBy: &holderPrev}))
	full()
	add("refused steal", events.ActionRefused, mustBody(tb, env(events.ActionRefused, 16, "req_i"), &events.Refused{
		Action: events.ActionSteal, Error: "holder is alive; use --active", State: events.StateDead, HeldBy: &holder}))
	add("refused steal unreadable", events.ActionRefused, mustBody(tb, env(events.ActionRefused, 16, "req_i"), &events.Refused{
		Action: events.ActionSteal, Error: "held by an unreadable lock file", State: events.StateHeld, UnreadableFile: unreadable}))
	full()
	add("refused heartbeat free", events.ActionRefused, mustBody(tb, env(events.ActionRefused, 17, "req_j"), &events.Refused{
		Action: events.ActionHeartbeat, Error: "no lock deploy-prod held by req_j", State: "free"}))
	add("refused minimal", events.ActionRefused, mustBody(tb, env(events.ActionRefused, 18, "r"), &events.Refused{
		Action: events.ActionRelease, Error: "x"}))
	add("projected", events.LockProjected, mustBody(tb, env(events.LockProjected, 19, "req_k"), &events.Projected{
		Changes: []string{"lock file rewritten"}}))
	add("projected everything", events.LockProjected, mustBody(tb, env(events.LockProjected, 20, "req_k"), &events.Projected{
		Changes:    []string{"locks row: held by req_a", "lock file /srv/locks/deploy-prod.lock restored", "target bso:/srv/x.lock removed"},
		MovedAside: "/srv/locks/deploy-prod.lock.corrupt-20261122T222354Z", BrokenChainAccepted: true, FirstBadSeq: 7}))
	full()
	add("job processes killed", events.JobProcesses, mustBody(tb, env(events.JobProcesses, 21, "req_l"), &events.JobProcessesPayload{
		JobRequestID: "req_a", PIDs: []int{4243, 4250, 1 << 40}, Action: events.JobKilled, Note: "left the process group"}))
	full()
	add("job processes left", events.JobProcesses, mustBody(tb, env(events.JobProcesses, 22, "req_m"), &events.JobProcessesPayload{
		JobRequestID: "r", PIDs: []int{1}, Action: events.JobLeftRunning}))
	add("job processes terminated", events.JobProcesses, mustBody(tb, env(events.JobProcesses, 23, "req_n"), &events.JobProcessesPayload{
		JobRequestID: "req:1.2-3_4", PIDs: []int{7, 7}, Action: events.JobTerminated, Note: ""}))
	add("stolen reclaimed", events.LockStolen, mustBody(tb, env(events.LockStolen, 24, "req_old"), &events.Stolen{Acquired: acq,
		PreviousLock: prev, PreviousLockHash: events.LockFileHash(prev.File()), Reason: events.ReasonReclaimed}))
	// The ledger-wide events: no lock_name.
	ledger := func(typ events.Type, seq int64, req string) events.Envelope {
		e := env(typ, seq, req)
		e.LockName = ""
		return e
	}
	head := strings.Repeat("0123456789abcdef", 4)
	add("exported", events.LedgerExported, mustBody(tb, ledger(events.LedgerExported, 25, "req_o"), &events.Exported{
		Events: 0, Format: "jsonl", Destination: events.DestinationStdout}))
	add("exported everything", events.LedgerExported, mustBody(tb, ledger(events.LedgerExported, 26, "req_p"), &events.Exported{
		Since: "2026-11-22T00:00:00.000000000Z", Until: "2026-11-23T00:00:00.000000000Z", FirstSeq: 4, LastSeq: 24,
		Events: 21, Format: "csv", Destination: "/srv/audit/ledger-2026-11.csv"}))
	full()
	add("exported (before uid)", events.LedgerExported, mustBody(tb, old(ledger(events.LedgerExported, 27, "r")), &events.Exported{
		FirstSeq: 1, LastSeq: 1, Events: 1, Format: "jsonl", Destination: "/x"}))
	add("verified", events.LedgerVerified, mustBody(tb, ledger(events.LedgerVerified, 28, "req_q"), &events.Verified{
		Result: events.AuditOK, Events: 27, FirstSeq: 1, LastSeq: 27, HeadHash: head}))
	add("verified everything", events.LedgerVerified, mustBody(tb, ledger(events.LedgerVerified, 29, "req_r"), &events.Verified{
		Result: events.AuditFailed, Events: 27, Problems: 3, FirstBadSeq: 4, FirstSeq: 2, LastSeq: 28, HeadHash: head,
		File: "/home/auditor/ledger.jsonl"}))
	full()
	add("verified empty", events.LedgerVerified, mustBody(tb, ledger(events.LedgerVerified, 30, "req_s"), &events.Verified{
		Result: events.AuditOK}))
	add("ledger projected", events.LedgerProjected, mustBody(tb, ledger(events.LedgerProjected, 31, "req_t"),
		&events.LedgerProjectedPayload{Result: events.AuditOK, Events: 30, Locks: 2}))
	add("ledger projected everything", events.LedgerProjected, mustBody(tb, ledger(events.LedgerProjected, 32, "req_u"),
		&events.LedgerProjectedPayload{Result: events.AuditOK, Events: 31, Locks: 2, RowsChanged: 1, FilesChanged: 3,
			Problems: 1, BrokenChainAccepted: true, FirstBadSeq: 7,
			RollbackAccepted: &events.Pin{LedgerID: strings.Repeat("ab", 16), Seq: 9, Hash: strings.Repeat("cd", 32)}}))
	full()
	add("ledger projected refused", events.LedgerProjected, mustBody(tb, ledger(events.LedgerProjected, 33, "req_v"),
		&events.LedgerProjectedPayload{Result: events.AuditRefused, Events: 32, Locks: 2, Problems: 4, FirstBadSeq: 7}))
	add("ledger pruned", events.LedgerPruned, mustBody(tb, ledger(events.LedgerPruned, 34, "req_w"),
		&events.Pruned{FirstSeq: 1, LastSeq: 33, Events: 33, HeadHash: "abababababababababababababababababababababababababababababababab", File: "/srv/archive.jsonl",
			Note: events.PruneNote("abababababababababababababababababababababababababababababababab", "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd")}))
	add("ledger pruned again", events.LedgerPruned, mustBody(tb, ledger(events.LedgerPruned, 35, "req_x"),
		&events.Pruned{FirstSeq: 34, LastSeq: 34, Events: 1, HeadHash: "abababababababababababababababababababababababababababababababab", Note: "x"}))
	add("ledger unpruned", events.LedgerUnpruned, mustBody(tb, ledger(events.LedgerUnpruned, 36, "req_y"),
		&events.Pruned{FirstSeq: 34, LastSeq: 34, Events: 1, HeadHash: "abababababababababababababababababababababababababababababababab", File: "/srv/archive.jsonl",
			Note: events.PruneNote("abababababababababababababababababababababababababababababababab", "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd")}))
	add("lock file", events.Type(schema.LockFile), prev.File())
	full()
	return out
}

// member is one JSON object member addressed by a path of keys (and array
// indexes for targets).
type fieldPath []any // string keys, int indexes

func (p fieldPath) String() string {
	var b strings.Builder
	for _, s := range p {
		fmt.Fprintf(&b, "/%v", s)
	}
	return b.String()
}

func decodeGeneric(tb testing.TB, body []byte) map[string]any {
	tb.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		tb.Fatal(err)
	}
	return m
}

// deepCopy copies a decoded JSON value.
func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = deepCopy(x)
		}
		return m
	case []any:
		a := make([]any, len(v))
		for i, x := range v {
			a[i] = deepCopy(x)
		}
		return a
	}
	return v
}

// paths lists every member path of v: object members, and the members
// of objects inside arrays.
func paths(v any, prefix fieldPath) []fieldPath {
	var out []fieldPath
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := append(append(fieldPath{}, prefix...), k)
			out = append(out, p)
			out = append(out, paths(v[k], p)...)
		}
	case []any:
		for i, x := range v {
			p := append(append(fieldPath{}, prefix...), i)
			if _, obj := x.(map[string]any); !obj {
				out = append(out, p) // an element of an array of scalars (changes, pids)
			}
			out = append(out, paths(x, p)...)
		}
	}
	return out
}

// objectPaths lists the paths of every object in v (the root included).
func objectPaths(v any, prefix fieldPath) []fieldPath {
	var out []fieldPath
	switch v := v.(type) {
	case map[string]any:
		out = append(out, prefix)
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, objectPaths(v[k], append(append(fieldPath{}, prefix...), k))...)
		}
	case []any:
		for i, x := range v {
			out = append(out, objectPaths(x, append(append(fieldPath{}, prefix...), i))...)
		}
	}
	return out
}

// edit applies f to the container holding the last step of p.
func edit(root any, p fieldPath, set func(parent any, key any)) {
	cur := root
	for _, step := range p[:len(p)-1] {
		switch s := step.(type) {
		case string:
			cur = cur.(map[string]any)[s]
		case int:
			cur = cur.([]any)[s]
		}
	}
	set(cur, p[len(p)-1])
}

func encode(tb testing.TB, v any) []byte {
	tb.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		tb.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// replacements are the values every field is set to in turn: each JSON
// type, numbers at and around every bound and in every spelling, strings
// at and around every length bound and pattern.
func replacements() []string {
	r := []string{
		`null`, `true`, `false`, `[]`, `[1]`, `{}`, `{"a":"b"}`, `{"a":1}`, `{"a":null}`, `[{}]`,
		`0`, `1`, `-1`, `2`, `255`, `256`, `-0`, `0.0`, `1.0`, `1.5`, `0.5`, `-0.5`, `1e0`, `1E0`, `10e-1`, `0.1e1`,
		`1e2`, `1e-1`, `100e-2`, `254.9999999999999999999`, `255.0000000000000000001`, `0.99999999999999999999`,
		`1e400`, `-1e400`, `9223372036854775807`, `9223372036854775808`, `-9223372036854775809`,
		`4294967295`, `4294967296`, `4294967295.0`, `4294967295.5`,
		`0e99999999999`, `0.0e-1000001`, `1e1000001`, `1e-1000001`, `0e99999999999999999999`,
		`1e99999999999999999999`, `1e-99999999999999999999`, `100e-1000002`, `1.0e1000002`, `0.01e-999999`,
		// (1e1000000 is fine with big.Rat but takes it 50 ms: TestFastNumbers has it.)
		// The "int64" and "float64" formats: integers in other spellings, and
		// the edges of int64 and float64.
		`2.0`, `42e0`, `4.2e1`, `1.0e0`, `-0.0`, `-0e0`, `99999999999999999999`, `100000000000000000`,
		`1000000000000000000`, `9223372036854775807.0`, `92233720368547758070e-1`, `-9223372036854775808`,
		`1e18`, `1e-400`, `-1e-400`, `1.7976931348623157e308`, `1.7976931348623159e308`, `-1.8e308`,
		`2e308`, `0.1e309`, `0.00000000000000000000000000000000001e340`,
		strings.Repeat("9", 308), strings.Repeat("9", 309), "1" + strings.Repeat("0", 308) + ".5",
		maxFloat.Text(10), new(big.Int).Sub(halfPastMaxFloat, big.NewInt(1)).Text(10), halfPastMaxFloat.Text(10),
		`""`, `"x"`, `"A"`, `"/"`, `"//"`, `"/x"`, `"x/"`, `"v1"`, `"V1"`, `"held"`, `"stale"`, `"dead"`, `"free"`,
		`"success"`, `"failure"`, `"cancelled"`, `"forced"`, `"Forced"`, `"stale_lock_forced"`, `"superseded"`, `"forced_active "`, `"reclaimed"`,
		`"release"`, `"steal"`, `"heartbeat"`, `"Release"`, `"terminated"`, `"killed"`, `"left_running"`, `"bso"`,
		`["x"]`, `[""]`, `[0]`, `[1,2]`, `["x",1]`, `[null]`, `[[]]`, `[1.0]`,
		`"tower-fleet"`, `"gitclaw"`, `"beads "`, `"shared"`, `"exclusive"`, `"Shared"`, `1000000`, `1000001`, `"lock_heartbeat"`, `"lock_acquired"`, `"acquire_blocked"`,
		`"ledger_exported"`, `"ledger_verified"`, `"ledger_projected"`, `"ledger_pruned"`, `"ledger_unpruned"`, `"ok"`, `"failed"`, `"refused"`, `"OK"`,
		`"jsonl"`, `"csv"`, `"json"`, `"stdout"`, `"stdout "`, `"Stdout"`, `"-"`, `"\u0073tdout"`,
		`"` + strings.Repeat("0a", 32) + `"`, `"` + strings.Repeat("0A", 32) + `"`, `"` + strings.Repeat("0a", 31) + `0"`,
		`"lock_\u0061cquired"`, `"\u0076\u0031"`, `"\/x"`, `"\u002fx"`,
		`"2026-01-02T03:04:05Z"`, `"2026-01-02T03:04:05.5+01:00"`, `"2026-02-30T03:04:05Z"`, `"2024-02-29T23:59:60Z"`,
		`"2026-01-02t03:04:05z"`, `"2026-01-02T24:00:00Z"`, `"2026-01-02 03:04:05Z"`, `"2026-01-02T+1:04:05Z"`,
		`"2026-11-22T22:23:54.861197406Z"`, `"2026-11-22T22:23:54.86119740Z"`, `"2026-11-22T22:23:54.861197406z"`,
		`"01M82NQNZDDVC3QZH7KVMR0924"`, `"01M82NQNZDDVC3QZH7KVMR092I"`, `"01m82nqnzddvc3qzh7kvmr0924"`,
		`"01M82NQNZDDVC3QZH7KVMR092"`, `"01M82NQNZDDVC3QZH7KVMR09244"`, `"01M82NQNZDDVC3QZH7KVMR0924\n"`,
		`"sha256:` + strings.Repeat("ab", 32) + `"`, `"sha256:` + strings.Repeat("AB", 32) + `"`,
		`"sha256:` + strings.Repeat("ab", 31) + `"`, `"sha512:` + strings.Repeat("ab", 32) + `"`,
		`"deploy"`, `"Deploy"`, `"a-"`, `"-a"`, `"a_b"`, `"a.b"`, `"a b"`, `"é"`, `"\u00e9"`, `"\ud800"`, `"\ud83d\ude00"`,
		`"req_1"`, `"req:1.2-3_4"`, `"req/1"`, `"x\u0000"`, `"\t"`,
		"\"\xff\"", "\"a\xc3\"", "\"\xed\xa0\x80\"",
	}
	// Every maxLength/minLength and pattern length bound, and one past it.
	for _, n := range []int{1, 2, 26, 64, 65, 128, 129, 256, 257, 1024, 1025, 4096, 4097} {
		r = append(r, `"`+strings.Repeat("a", n)+`"`, `"/`+strings.Repeat("é", n-1)+`"`)
	}
	for _, n := range []int{64, 65, 256, 257} {
		r = append(r, `"`+strings.Repeat(`\u00e9`, n)+`"`)
	}
	return r
}

var (
	maxFloat, _ = new(big.Float).SetFloat64(math.MaxFloat64).Int(nil)
	// halfPastMaxFloat is half an ulp past math.MaxFloat64: strconv.ParseFloat
	// rounds it to +Inf.
	halfPastMaxFloat = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 1024), new(big.Int).Lsh(big.NewInt(1), 970))
)

// mutations derives invalid (and some valid) bodies from a valid one:
// every member removed, set to every replacement, an extra member in
// every object, and text-level damage.
func mutations(tb testing.TB, s seedBody, reps []string) []seedBody {
	tb.Helper()
	var out []seedBody
	if s.full {
		out = fieldMutations(tb, s, decodeGeneric(tb, s.body), reps)
	}
	return append(out, textMutations(s)...)
}

// fieldMutations: every member removed, set to every replacement, an extra
// member in every object, too many targets.
func fieldMutations(tb testing.TB, s seedBody, root map[string]any, reps []string) []seedBody {
	var out []seedBody
	add := func(name string, b []byte) {
		out = append(out, seedBody{name: s.name + ": " + name, typ: s.typ, body: b})
	}
	for _, p := range paths(root, nil) {
		if _, member := p[len(p)-1].(string); member {
			c := deepCopy(root)
			edit(c, p, func(parent any, key any) {
				delete(parent.(map[string]any), key.(string))
			})
			add("remove "+p.String(), encode(tb, c))
		}
		for _, r := range reps {
			c := deepCopy(root)
			edit(c, p, func(parent any, key any) {
				switch parent := parent.(type) {
				case map[string]any:
					parent[key.(string)] = json.RawMessage(r)
				case []any:
					parent[key.(int)] = json.RawMessage(r)
				}
			})
			add("set "+p.String()+" = "+r, encode(tb, c))
		}
	}
	for _, p := range objectPaths(root, nil) {
		for _, extra := range []string{"extra", "type", "seq", "metadata", "format", "lock_version", "held_by", "unreadable_file", "note", "foreign", "Seq",
			"action", "state", "superseded_by", "pids", "changes", "uid", "user", "lock_name", "events", "destination", "result",
			"mode", "limit", "rollback_accepted", "ledger_id", "hash", "waited_seconds"} {
			c := deepCopy(root)
			if len(p) == 0 {
				c.(map[string]any)[extra] = json.RawMessage(`"x"`)
			} else {
				edit(c, p, func(parent any, key any) {
					var obj map[string]any
					switch parent := parent.(type) {
					case map[string]any:
						obj, _ = parent[key.(string)].(map[string]any)
					case []any:
						obj, _ = parent[key.(int)].(map[string]any)
					}
					if obj != nil {
						if _, exists := obj[extra]; !exists {
							obj[extra] = json.RawMessage(`"x"`)
						}
					}
				})
			}
			add("extra "+p.String()+"/"+extra, encode(tb, c))
		}
	}
	// Arrays at and around their item bounds.
	for _, a := range []struct {
		field  string
		counts []int
	}{{"targets", []int{0, 16, 17}}, {"changes", []int{0, 1, 64, 65}}, {"pids", []int{0, 1, 4096, 4097}}} {
		t, ok := root[a.field].([]any)
		if !ok || len(t) == 0 {
			continue
		}
		for _, n := range a.counts {
			c := deepCopy(root).(map[string]any)
			items := make([]any, n)
			for i := range items {
				items[i] = deepCopy(t[i%len(t)])
			}
			c[a.field] = items
			add(fmt.Sprintf("%d %s", n, a.field), encode(tb, c))
		}
		for _, r := range []string{`1,0`, `1,1.0`, `1,"x"`, `"x",""`, `"x",null`, `1,9223372036854775808`, `"x","` + strings.Repeat("a", 1025) + `"`} {
			c := deepCopy(root).(map[string]any)
			c[a.field] = json.RawMessage(`[` + r + `]`)
			add(a.field+" = ["+r+"]", encode(tb, c))
		}
	}
	return out
}

// textMutations: duplicates, escapes, white space, trailing data, syntax.
func textMutations(s seedBody) []seedBody {
	var out []seedBody
	b := s.body
	text := map[string]string{
		"trailing }":            string(b) + "}",
		"trailing ]":            string(b) + "]",
		"trailing ] garbage":    string(b) + " ]garbage",
		"trailing space":        string(b) + " \n\t\r",
		"trailing x":            string(b) + "x",
		"trailing space }":      string(b) + " }",
		"trailing }}":           string(b) + "}}",
		"trailing NUL":          string(b) + "\x00",
		"trailing vtab":         string(b) + "\v",
		"trailing object":       string(b) + "{}",
		"trailing comma":        string(b) + ",",
		"leading space":         " \n" + string(b),
		"leading BOM":           "\ufeff" + string(b),
		"leading vtab":          "\v" + string(b),
		"nbsp inside":           strings.Replace(string(b), ",", ",\u00a0", 1),
		"spaces inside":         strings.ReplaceAll(strings.ReplaceAll(string(b), ",", " ,\n "), ":", "\t: "),
		"comma before }":        string(b[:len(b)-1]) + ",}",
		"empty":                 "",
		"space":                 " ",
		"array":                 "[" + string(b) + "]",
		"string":                `"x"`,
		"null":                  "null",
		"number":                "1",
		"empty object":          "{}",
		"truncated":             string(b[:len(b)-1]),
		"half":                  string(b[:len(b)/2]),
		"single quote":          strings.Replace(string(b), `"`, `'`, 2),
		"NaN":                   strings.Replace(string(b), `"pid":`, `"pid":NaN,"x":`, 1),
		"leading zero":          strings.Replace(string(b), `"pid":`, `"pid":0`, 1),
		"plus number":           strings.Replace(string(b), `"pid":`, `"pid":+`, 1),
		"control char":          strings.Replace(string(b), `"actor":"`, "\"actor\":\"\x01", 1),
		"bad escape":            strings.Replace(string(b), `"actor":"`, `"actor":"\x`, 1),
		"short u escape":        strings.Replace(string(b), `"actor":"`, `"actor":"\u12`, 1),
		"escaped key":           strings.Replace(string(b), `"seq"`, `"\u0073eq"`, 1),
		"escaped type key":      strings.Replace(string(b), `"lock_version"`, `"lock\u005fversion"`, 1),
		"upper key":             strings.Replace(string(b), `"seq"`, `"SEQ"`, 1),
		"invalid utf8 key":      strings.Replace(string(b), `"seq"`, "\"seq\xff\"", 1),
		"invalid utf8 value":    strings.Replace(string(b), `"actor":"`, "\"actor\":\"\xff", 1),
		"dup first seq 0":       `{"seq":0,` + string(b[1:]),
		"dup last seq 0":        string(b[:len(b)-1]) + `,"seq":0}`,
		"dup last seq 7":        string(b[:len(b)-1]) + `,"seq":7}`,
		"dup last pid 1.0":      string(b[:len(b)-1]) + `,"pid":1.0}`,
		"dup last pid null":     string(b[:len(b)-1]) + `,"pid":null}`,
		"dup last pid 42e0":     string(b[:len(b)-1]) + `,"pid":42e0}`,
		"dup last pid huge":     string(b[:len(b)-1]) + `,"pid":99999999999999999999}`,
		"dup last seq 2.0":      string(b[:len(b)-1]) + `,"seq":2.0}`,
		"dup last version 1.0":  string(b[:len(b)-1]) + `,"schema_version":1.0}`,
		"dup last version 1e0":  string(b[:len(b)-1]) + `,"schema_version":1e0}`,
		"dup last held 1e400":   string(b[:len(b)-1]) + `,"held_duration_seconds":1e400}`,
		"dup last waited 2e308": string(b[:len(b)-1]) + `,"waited_seconds":2e308}`,
		"dup last wait 1e-400":  string(b[:len(b)-1]) + `,"waited_seconds":1e-400}`,
		"dup last ttl 9e0":      string(b[:len(b)-1]) + `,"ttl_seconds":9e0}`,
		"nested pid 77.0":       strings.Replace(string(b), `"pid":77`, `"pid":77.0`, 1),
		"nested pid fixed":      strings.Replace(string(b), `"pid":77`, `"pid":77.0,"pid":77`, 1),
		"nested pid broken":     strings.Replace(string(b), `"pid":77`, `"pid":77,"pid":77.0`, 1),
		"nested meta number":    strings.Replace(string(b), `"ticket":"OPS-1"`, `"ticket":1`, 1),
		"nested meta fixed":     strings.Replace(string(b), `"ticket":"OPS-1"`, `"ticket":1,"ticket":"OPS-1"`, 1),
		"dup first pid big":     `{"pid":1e1000001,` + string(b[1:]),
		"dup last pid big":      string(b[:len(b)-1]) + `,"pid":1e1000001}`,
		"dup metadata":          string(b[:len(b)-1]) + `,"metadata":{"a":"b"}}`,
		"dup metadata bad":      string(b[:len(b)-1]) + `,"metadata":{"a":1}}`,
		"dup metadata fixed":    string(b[:len(b)-1]) + `,"metadata":{"a":1,"b":2,"a":"x","b":"y"}}`,
		"dup metadata esc":      string(b[:len(b)-1]) + `,"metadata":{"a":1,"\u0061":"x"}}`,
		"dup metadata utf8":     string(b[:len(b)-1]) + ",\"metadata\":{\"\xff\":1,\"\xfe\":\"x\"}}",
		"dup metadata left":     string(b[:len(b)-1]) + `,"metadata":{"a":1,"b":"x","\u0062":2}}`,
		"dup type":              string(b[:len(b)-1]) + `,"type":"lock_heartbeat"}`,
		"dup metadata last bad": string(b[:len(b)-1]) + `,"metadata":{"a":"x","a":1}}`,
		"nested dup fixed":      strings.Replace(string(b), `"previous_lock":{`, `"previous_lock":{"pid":-1,"lock_version":"v2",`, 1),
		"nested dup broken":     strings.Replace(string(b), `"previous_lock":{`, `"previous_lock":{"zz":1,`, 1),
		"nested held_by dup":    strings.Replace(string(b), `"held_by":{`, `"held_by":{"pid":"x",`, 1),
		"nested escaped key":    strings.Replace(string(b), `"previous_lock":{`, `"previous_lock":{"\u0070id":-1,`, 1),
		"escaped lock name":     strings.Replace(string(b), `"lock_name":"deploy-prod"`, `"lock_name":"deploy\u002dprod"`, 1),
		"escaped lock name bad": strings.Replace(string(b), `"lock_name":"deploy-prod"`, `"lock_name":"deploy\u002Dpro\u0044"`, 1),
		"escaped event id":      strings.Replace(string(b), `"event_id":"0`, `"event_id":"\u0030`, 1),
		"target dup":            strings.Replace(string(b), `"targets":[{`, `"targets":[{"path":"x",`, 1),
		"target extra":          strings.Replace(string(b), `"targets":[{`, `"targets":[{"x":"x",`, 1),
		"dup extra":             string(b[:len(b)-1]) + `,"zzz":1,"zzz":2}`,
	}
	keys := make([]string, 0, len(text))
	for k := range text {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, seedBody{name: s.name + ": " + k, typ: s.typ, body: []byte(text[k]), cross: true})
	}
	for i := 1; i < 10; i++ {
		out = append(out, seedBody{name: fmt.Sprintf("%s: cut %d/10", s.name, i), typ: s.typ, body: b[:len(b)*i/10]})
	}
	return out
}

// deepBodies nest arrays in the metadata of a lock file (any object) or of
// previous_lock (refused at any depth: its values are strings) right up to
// encoding/json's depth limit of 10000, and one past it.
func deepBodies(tb testing.TB, seeds []seedBody) []seedBody {
	var out []seedBody
	for _, s := range seeds {
		if s.typ != events.LockStolen && s.typ != events.Type(schema.LockFile) {
			continue
		}
		depth := 2 // the lock file object, its metadata
		if s.typ == events.LockStolen {
			depth = 3 // the event, previous_lock, its metadata
		}
		for _, total := range []int{jsonMaxDepth, jsonMaxDepth + 1} {
			n := total - depth
			nest := `{"deep":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`
			root := decodeGeneric(tb, s.body)
			if s.typ == events.LockStolen {
				root["previous_lock"].(map[string]any)["metadata"] = "__DEEP__"
			} else {
				root["metadata"] = "__DEEP__"
			}
			// Spliced as text: encoding/json would refuse to write it.
			b := bytes.Replace(encode(tb, root), []byte(`"__DEEP__"`), []byte(nest), 1)
			out = append(out, seedBody{name: fmt.Sprintf("%s: depth %d", s.name, total), typ: s.typ, body: b})
		}
		break
	}
	return out
}

// corpus is every valid seed, every mutation of them, and the deep bodies
// (built once per test binary: the differential test and the fuzz target's
// seeds share it).
func corpus(tb testing.TB) []seedBody {
	corpusOnce.Do(func() { corpusCache = buildCorpus(tb) })
	if corpusCache == nil {
		tb.Fatal("corpus: built with errors")
	}
	return corpusCache
}

// jsonMaxDepth is encoding/json's nesting limit.
const jsonMaxDepth = 10000

var (
	corpusOnce  sync.Once
	corpusCache []seedBody
)

func buildCorpus(tb testing.TB) []seedBody {
	seeds := validSeeds(tb)
	out := append([]seedBody{}, seeds...)
	reps := replacements()
	for _, s := range seeds {
		out = append(out, mutations(tb, s, reps)...)
	}
	for _, typ := range []events.Type{events.LockStolen, events.Type(schema.LockFile)} {
		var only []seedBody
		for _, s := range seeds {
			if s.typ == typ {
				only = append(only, s)
			}
		}
		out = append(out, deepBodies(tb, only)...)
	}
	return out
}
