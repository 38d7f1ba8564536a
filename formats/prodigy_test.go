package formats

import (
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
)

// Prodigy's specification shows no file, only ResumeLockData and its values: job ids
// "mapreduce-123" / "session-abc" (Lock Storage), "PID 12345 on hostname
// (acquired 2025-01-11 10:30:00 UTC)" (the error message). This is what
// serde_json::to_string_pretty writes for them.
const prodigyGolden = "{\n  \"job_id\": \"mapreduce-123\",\n  \"process_id\": 12345,\n  \"hostname\": \"hostname\",\n  \"acquired_at\": \"2025-01-11T10:30:00Z\"\n}"

// The spec's test_stale_lock_cleanup writes serde_json::to_string (compact)
// of job "test-job", pid 999999, host "test-host", acquired Utc::now().
const prodigyTestExample = `{"job_id":"test-job","process_id":999999,"hostname":"test-host","acquired_at":"2025-01-11T10:30:00.123456789Z"}`

var prodigyDocHolder = Holder{Lock: "mapreduce-123", RequestID: "req_01", Actor: "alice", Intent: "resume",
	HostID: "hostname", PID: 12345, CreatedAt: utc("2025-01-11T10:30:00Z"), TTL: time.Minute}

var prodigyParsed = Holder{Lock: "mapreduce-123", RequestID: "prodigy:12345:1736591400", HostID: "hostname", PID: 12345,
	CreatedAt: utc("2025-01-11T10:30:00Z"), HeartbeatAt: utc("2025-01-11T10:30:00Z")}

func TestProdigyGolden(t *testing.T) {
	checkGolden(t, Prodigy, prodigyDocHolder, prodigyGolden)
	// chrono's AutoSi fraction: none, 3, 6 or 9 digits.
	for ns, want := range map[int]string{
		0:         "2025-01-11T10:30:00Z",
		120000000: "2025-01-11T10:30:00.120Z",
		123456000: "2025-01-11T10:30:00.123456Z",
		123456789: "2025-01-11T10:30:00.123456789Z",
		1:         "2025-01-11T10:30:00.000000001Z",
		1000:      "2025-01-11T10:30:00.000001Z",
	} {
		if got := chronoTime(time.Date(2025, 1, 11, 11, 30, 0, ns, time.FixedZone("CET", 3600))); got != want {
			t.Errorf("chronoTime(%d ns) = %s, want %s", ns, got, want)
		}
	}
	// job_id from metadata; serde escaping (no HTML escapes, control
	// characters as \u00xx, \b \f \n \r \t short).
	h := prodigyDocHolder
	h.Metadata = map[string]string{"job_id": "session-<&>\x01\b\"é\u2028"}
	h.HostID = "host\tname"
	checkGolden(t, Prodigy, h, "{\n  \"job_id\": \"session-<&>\\u0001\\b\\\"é\u2028\",\n  \"process_id\": 12345,\n  \"hostname\": \"host\\tname\",\n  \"acquired_at\": \"2025-01-11T10:30:00Z\"\n}")
}

func TestProdigyRoundTrip(t *testing.T) {
	checkRoundTrip(t, Prodigy, prodigyDocHolder, prodigyParsed)
	h := prodigyDocHolder
	h.CreatedAt = utc("2025-01-11T10:30:00.123456789Z")
	want := prodigyParsed
	want.CreatedAt, want.HeartbeatAt = h.CreatedAt, h.CreatedAt
	checkRoundTrip(t, Prodigy, h, want) // nanoseconds survive
}

func TestProdigySeedExampleParses(t *testing.T) {
	got, err := Prodigy.Parse([]byte(prodigyTestExample))
	if err != nil {
		t.Fatal(err)
	}
	if got.Lock != "test-job" || got.PID != 999999 || got.HostID != "test-host" || !got.CreatedAt.Equal(utc("2025-01-11T10:30:00.123456789Z")) {
		t.Errorf("Parse(spec test example) = %+v", got)
	}
	if got, err := Prodigy.Parse([]byte(prodigyGolden)); err != nil || got.Lock != "mapreduce-123" {
		t.Errorf("Parse(golden) = %+v, %v", got, err)
	}
	// chrono accepts a space separator and any offset; unknown fields are ignored.
	got, err = Prodigy.Parse([]byte(`{"job_id":"j","process_id":1,"hostname":"h","acquired_at":"2025-01-11 11:30:00+01:00","x":[]}`))
	if err != nil || !got.CreatedAt.Equal(utc("2025-01-11T10:30:00Z")) {
		t.Errorf("Parse(relaxed) = %+v, %v", got, err)
	}
}

var prodigyCorrupt = []string{
	`{"job_id":"j","process_id":1,"hostname":"h"}`,
	`{"job_id":"j","process_id":-1,"hostname":"h","acquired_at":"2025-01-11T10:30:00Z"}`,
	`{"job_id":"j","process_id":4294967296,"hostname":"h","acquired_at":"2025-01-11T10:30:00Z"}`,
	`{"job_id":"j","process_id":1.0,"hostname":"h","acquired_at":"2025-01-11T10:30:00Z"}`,
	`{"job_id":"j","process_id":"1","hostname":"h","acquired_at":"2025-01-11T10:30:00Z"}`,
	`{"job_id":null,"process_id":1,"hostname":"h","acquired_at":"2025-01-11T10:30:00Z"}`,
	`{"job_id":7,"process_id":1,"hostname":"h","acquired_at":"2025-01-11T10:30:00Z"}`,
	`{"job_id":"j","process_id":1,"hostname":"h","acquired_at":"2025-01-11T10:30:00Z","job_id":"k"}`,
	`{"job_id":"j","process_id":1,"hostname":"h","acquired_at":"11 Jan 2025"}`,
	`{"job_id":"j","process_id":1,"hostname":"h","acquired_at":"2025-01-11T10:30:00Z"}{}`,
	`"job"`,
}

func TestProdigyMalformed(t *testing.T) {
	for _, data := range prodigyCorrupt {
		malformedOf(t, Prodigy, data)
	}
}

func TestProdigyJudge(t *testing.T) {
	h := prodigyParsed // host "hostname", pid 12345
	now := h.CreatedAt.Add(time.Hour)
	runJudge(t, Prodigy, []judgeCase{
		{name: "same host, dead pid", h: h, now: now, env: Env{HostID: "hostname", Probe: probeGone},
			state: events.StateDead, reason: ReasonPIDDead},
		{name: "same host, alive", h: h, now: now, env: Env{HostID: "hostname", Probe: probeAlive},
			state: events.StateHeld, reason: ReasonPIDAlive},
		{name: "same host, EPERM is alive", h: h, now: now, env: Env{HostID: "hostname", Probe: probeEPERM},
			state: events.StateHeld, reason: ReasonPIDAlive},
		{name: "same host, unprobeable", h: h, now: now, env: Env{HostID: "hostname", Probe: probeUnknown},
			state: events.StateHeld, reason: ReasonPIDUnknown},
		{name: "other host: never judged by pid", h: h, now: now, env: Env{HostID: "other", Probe: probeMustNot(t)},
			state: events.StateHeld, reason: ReasonRemoteHost},
		{name: "hostname compare is exact", h: h, now: now, env: Env{HostID: "HOSTNAME", Probe: probeMustNot(t)},
			state: events.StateHeld, reason: ReasonRemoteHost},
		{name: "old but alive: no age limit of its own", h: h, now: h.CreatedAt.Add(1000 * time.Hour), env: Env{HostID: "hostname", Probe: probeAlive},
			state: events.StateHeld, reason: ReasonPIDAlive},
		{name: "--max-age past", h: h, now: now, env: Env{HostID: "hostname", Probe: probeAlive, MaxAge: 30 * time.Minute},
			state: events.StateStale, reason: ReasonMaxAge},
		{name: "--max-age under", h: h, now: now, env: Env{HostID: "hostname", Probe: probeAlive, MaxAge: 2 * time.Hour},
			state: events.StateHeld, reason: ReasonPIDAlive},
		{name: "malformed fails safe", parseErr: malformedOf(t, Prodigy, prodigyCorrupt[0]), now: now, env: Env{HostID: "hostname", Probe: probeGone},
			state: events.StateHeld, reason: ReasonCorrupt, failSafe: true},
	})
}
