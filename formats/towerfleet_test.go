package formats

import (
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/proc"
)

// The tower-fleet/lock/v1 specification's example file.
const towerFleetSpecExample = `{
  "lock_version": "v1",
  "lock_name": "money-tracker-production",
  "request_id": "req_abc123def456",
  "actor": "claude-code",
  "intent": "deploy-app",
  "intent_version": "1.2.0",
  "host_id": "tower-01",
  "pid": 12345,
  "created_at": "2025-12-18T10:30:10Z",
  "last_heartbeat_at": "2025-12-18T10:30:40Z",
  "ttl_seconds": 900,
  "metadata": {}
}
`

var towerFleetSpecHolder = Holder{
	Lock: "money-tracker-production", RequestID: "req_abc123def456", Actor: "claude-code",
	Intent: "deploy-app", IntentVersion: "1.2.0", HostID: "tower-01", PID: 12345,
	CreatedAt: utc("2025-12-18T10:30:10Z"), HeartbeatAt: utc("2025-12-18T10:30:40Z"),
	TTL: 900 * time.Second, Metadata: map[string]string{},
}

func TestTowerFleetGolden(t *testing.T) {
	checkGolden(t, TowerFleet, towerFleetSpecHolder, towerFleetSpecExample)
	// Sub-second times are written in whole seconds; a nil metadata is {}.
	h := towerFleetSpecHolder
	h.CreatedAt = h.CreatedAt.Add(999 * time.Millisecond)
	h.Metadata = nil
	checkGolden(t, TowerFleet, h, towerFleetSpecExample)
	// The same bytes as the ledger's own projection.
	if got, _ := TowerFleet.Render(towerFleetSpecHolder); string(got) != string(ToRecord(towerFleetSpecHolder).File()) {
		t.Errorf("Render differs from events.Record.File()")
	}
}

func TestTowerFleetRoundTrip(t *testing.T) {
	checkRoundTrip(t, TowerFleet, towerFleetSpecHolder, towerFleetSpecHolder)
	h := towerFleetSpecHolder
	h.Metadata = map[string]string{"ticket": "OPS-1", "quote": `"<&>"`}
	h.HeartbeatAt = time.Time{} // written as created_at
	want := h
	want.HeartbeatAt = h.CreatedAt
	checkRoundTrip(t, TowerFleet, h, want)
}

func TestTowerFleetSeedExampleParses(t *testing.T) {
	got, err := TowerFleet.Parse([]byte(towerFleetSpecExample))
	if err != nil {
		t.Fatal(err)
	}
	if got.RequestID != "req_abc123def456" || got.TTL != 900*time.Second || !got.HeartbeatAt.Equal(utc("2025-12-18T10:30:40Z")) {
		t.Errorf("Parse(spec example) = %+v", got)
	}
	// The lock-manager.sh create_lock_json output (jq -n), and a
	// file with non-string metadata and a fractional time.
	jq := "{\n  \"lock_version\": \"v1\",\n  \"lock_name\": \"money-tracker-production\",\n  \"request_id\": \"req_abc123\",\n  \"actor\": \"unknown\",\n  \"intent\": \"deploy-app\",\n  \"intent_version\": \"1.2.0\",\n  \"host_id\": \"tower-01\",\n  \"pid\": 4242,\n  \"created_at\": \"2025-12-18T10:30:10Z\",\n  \"last_heartbeat_at\": \"2025-12-18T10:30:10Z\",\n  \"ttl_seconds\": 900,\n  \"metadata\": {}\n}\n"
	if _, err := TowerFleet.Parse([]byte(jq)); err != nil {
		t.Errorf("Parse(lock-manager.sh output): %v", err)
	}
	odd := `{"lock_version":"v1","lock_name":"x","request_id":"r","actor":"a","intent":"i","intent_version":"1","host_id":"h","pid":1,"created_at":"2025-12-18T10:30:10.5+01:00","last_heartbeat_at":"2025-12-18T10:30:10Z","ttl_seconds":60,"metadata":{"n":3,"o":{"k":true}}}`
	h, err := TowerFleet.Parse([]byte(odd))
	if err != nil {
		t.Fatal(err)
	}
	if h.Metadata["n"] != "3" || h.Metadata["o"] != `{"k":true}` || !h.CreatedAt.Equal(utc("2025-12-18T09:30:10.5Z")) {
		t.Errorf("Parse(odd) = %+v", h)
	}
}

func TestTowerFleetMalformed(t *testing.T) {
	for _, data := range []string{
		`{`,
		`[]`,
		`{"lock_version":"v2"}`,
		`{"lock_version":"v1","lock_name":"x","request_id":"r","actor":"a","intent":"i","intent_version":"1","host_id":"h","pid":1,"created_at":"yesterday","last_heartbeat_at":"2025-12-18T10:30:10Z","ttl_seconds":60}`,
		`{"lock_version":"v1","lock_name":"x","request_id":"r","actor":"a","intent":"i","intent_version":"1","host_id":"h","pid":1,"created_at":"2025-12-18T10:30:10Z","last_heartbeat_at":"2025-12-18T10:30:10Z","ttl_seconds":0}`,
		`{"lock_version":"v1","lock_name":"x","request_id":"r","actor":"a","intent":"i","intent_version":"1","host_id":"h","pid":1,"created_at":"2025-12-18T10:30:10Z","last_heartbeat_at":"2025-12-18T10:30:10Z","ttl_seconds":60,"extra":1}`,
	} {
		malformedOf(t, TowerFleet, data)
	}
}

func TestTowerFleetJudge(t *testing.T) {
	hb := utc("2025-12-18T10:30:40Z")
	h := towerFleetSpecHolder // host tower-01, pid 12345, ttl 900 s
	older := h
	older.CreatedAt = hb.Add(-30 * time.Hour)
	here := Env{HostID: "tower-01"}
	with := func(e Env, probe func(int) proc.Liveness) Env { e.Probe = probe; return e }
	runJudge(t, TowerFleet, []judgeCase{
		{name: "heartbeat fresh, pid alive", h: h, now: hb.Add(30 * time.Second), env: with(here, probeAlive),
			state: events.StateHeld, reason: ReasonActive},
		{name: "heartbeat exactly ttl old is still held", h: h, now: hb.Add(900 * time.Second), env: with(here, probeAlive),
			state: events.StateHeld, reason: ReasonActive},
		{name: "heartbeat older than ttl", h: h, now: hb.Add(901 * time.Second), env: with(here, probeAlive),
			state: events.StateStale, reason: ReasonTTLExpired},
		{name: "a dead pid is informational only: held while the heartbeat is fresh", h: h, now: hb.Add(30 * time.Second),
			env: Env{HostID: "tower-01", Probe: probeMustNot(t)}, state: events.StateHeld, reason: ReasonActive},
		{name: "other host is never judged by pid", h: h, now: hb.Add(30 * time.Second), env: Env{HostID: "tower-02", Probe: probeMustNot(t)},
			state: events.StateHeld, reason: ReasonActive},
		{name: "host compare is exact", h: h, now: hb.Add(30 * time.Second), env: Env{HostID: "TOWER-01", Probe: probeMustNot(t)},
			state: events.StateHeld, reason: ReasonActive},
		{name: "other host, stale heartbeat", h: h, now: hb.Add(time.Hour), env: Env{HostID: "tower-02", Probe: probeMustNot(t)},
			state: events.StateStale, reason: ReasonTTLExpired},
		{name: "max-age past", h: older, now: hb.Add(30 * time.Second), env: Env{HostID: "tower-01", Probe: probeAlive, MaxAge: 24 * time.Hour},
			state: events.StateStale, reason: ReasonMaxAge},
		{name: "max-age under", h: older, now: hb.Add(30 * time.Second), env: Env{HostID: "tower-01", Probe: probeAlive, MaxAge: 48 * time.Hour},
			state: events.StateHeld, reason: ReasonActive},
		{name: "no default max-age", h: older, now: hb.Add(30 * time.Second), env: with(here, probeAlive),
			state: events.StateHeld, reason: ReasonActive},
		{name: "malformed fails safe", parseErr: malformedOf(t, TowerFleet, `{"lock_version":`), now: hb, env: with(here, probeGone),
			state: events.StateHeld, reason: ReasonCorrupt, failSafe: true},
	})
}
