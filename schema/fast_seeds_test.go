package schema_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/schema"
)

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
	holderUID := events.HolderOf(prev)
	holderUID.UID = new(1000)
	add("released by another", events.LockReleased, mustBody(tb, env(events.LockReleased, 8, "req_a"), &events.Released{
		HeldDurationSeconds: 1, Result: events.ResultSuccess, FencingToken: 12, ReleasedRequestID: "req_a", HeldBy: &holderUID}))
	add("released forced, held_by", events.LockReleased, mustBody(tb, env(events.LockReleased, 10, "req_z"), &events.Released{
		HeldDurationSeconds: 60, Result: events.ResultForced, Forced: true, ReleasedRequestID: "req_a", FencingToken: 9,
		Note: "INC-44", HeldBy: &holderUID}))
	add("heartbeat_failed, held_by", events.HeartbeatFailed, mustBody(tb, env(events.HeartbeatFailed, 11, "req_a"), &events.HeartbeatFailedPayload{
		ConsecutiveFailures: 1, Error: "lost", LockLost: true, HeldBy: &holderUID}))
	add("heartbeat_failed, recorded_by", events.HeartbeatFailed, mustBody(tb, env(events.HeartbeatFailed, 12, "req_a"), &events.HeartbeatFailedPayload{
		ConsecutiveFailures: 1, Error: "lost", LockLost: true, RecordedBy: &events.Caller{Actor: "root", HostID: "vm", PID: 42}}))
	add("stolen, held_by", events.LockStolen, mustBody(tb, env(events.LockStolen, 5, "req_b"), &events.Stolen{Acquired: acq,
		PreviousLock: prev, PreviousLockHash: events.LockFileHash(prev.File()), Reason: events.ReasonStaleForced, HeldBy: &holderUID}))
	withSecret := acq
	withSecret.ReleaseSecretSHA256 = strings.Repeat("0a", 32)
	add("acquired, release secret", events.LockAcquired, mustBody(tb, env(events.LockAcquired, 3, "r"), &withSecret))
	add("stolen, release secret", events.LockStolen, mustBody(tb, env(events.LockStolen, 5, "req_b"), &events.Stolen{Acquired: withSecret,
		PreviousLock: prev, PreviousLockHash: events.LockFileHash(prev.File()), Reason: events.ReasonHolderDead}))
	add("released on the release secret", events.LockReleased, mustBody(tb, env(events.LockReleased, 8, "req_a"), &events.Released{
		HeldDurationSeconds: 1, Result: events.ResultSuccess, FencingToken: 12, ReleasedRequestID: "req_a", HeldBy: &holderUID,
		AuthorizedBy: events.AuthorizedByReleaseSecret}))
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
	add("blocked and queued", events.AcquireBlocked, mustBody(tb, env(events.AcquireBlocked, 14, "req_g"), &events.Blocked{
		HeldBy: new(events.HolderOf(prev)), State: events.StateHeld, WaitedSeconds: 0, Until: "2026-11-22T22:24:54.861197406Z",
		PIDStart: "12345", BootID: "0a1b2c3d-0000-4000-8000-000000000000"}))
	full()
	add("blocked by the queue, queued", events.AcquireBlocked, mustBody(tb, env(events.AcquireBlocked, 14, "req_g"), &events.Blocked{
		State: events.StateHeld, WaitedSeconds: 0.25, Reason: events.BlockedByQueue, Until: "2026-11-22T22:24:54.861197406Z"}))
	full()
	add("a queued place renewed", events.AcquireBlocked, mustBody(tb, env(events.AcquireBlocked, 14, "req_g"), &events.Blocked{
		HeldBy: new(events.HolderOf(prev)), State: events.StateHeld, WaitedSeconds: 5.5, Until: "2026-11-22T22:24:54.861197406Z",
		PIDStart: "12345", BootID: "0a1b2c3d-0000-4000-8000-000000000000", QueuedSeq: 9, QueuedAt: "2026-11-22T22:24:34.861197406Z",
		PIDNS: new(int64(4026531836))}))
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
	add("fence rejected file", events.FenceRejected, mustBody(tb, env(events.FenceRejected, 37, "req_z"),
		&events.FenceRejectedPayload{Fence: events.FenceFileWrite, Resource: "/srv/app/config.json", StaleToken: 7, CurrentToken: 9}))
	full()
	add("fence rejected postgres", events.FenceRejected, mustBody(tb, env(events.FenceRejected, 38, "r"),
		&events.FenceRejectedPayload{Fence: events.FencePostgresWrite, Resource: "orders", StaleToken: 1, CurrentToken: 1 << 40}))
	add("fence rejected check", events.FenceRejected, mustBody(tb, env(events.FenceRejected, 39, "req_1"),
		&events.FenceRejectedPayload{Fence: events.FenceCheck, Resource: "x", StaleToken: 2, CurrentToken: 3}))
	add("signer added", events.SignerAdded, mustBody(tb, ledger(events.SignerAdded, 40, "req_2"),
		&events.Signer{Key: "ops@host-a+0a1b2c3d+AQID", Role: events.RoleOwner, Statement: "lockledger signer/v1 ops@host-a AQID"}))
	add("signer removed", events.SignerRemoved, mustBody(tb, ledger(events.SignerRemoved, 41, "req_3"),
		&events.Signer{Key: "x", Role: "host", Statement: "s"}))
	full()
	add("lock file", events.Type(schema.LockFile), prev.File())
	full()
	return out
}
