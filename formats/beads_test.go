package formats

import (
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
)

// EXCLUSIVE_LOCK.md, "Lock File Format", as the seed copy shows it (its
// indentation lost) and as beads' Go code writes it (MarshalIndent with two
// spaces, no trailing newline).
const (
	beadsDocExample = "{\n\"holder\": \"vc-executor\",\n\"pid\": 12345,\n\"hostname\": \"dev-machine\",\n\"started_at\": \"2025-10-25T12:00:00Z\",\n\"version\": \"1.0.0\"\n}\n"
	beadsGolden     = "{\n  \"holder\": \"vc-executor\",\n  \"pid\": 12345,\n  \"hostname\": \"dev-machine\",\n  \"started_at\": \"2025-10-25T12:00:00Z\",\n  \"version\": \"1.0.0\"\n}"
	// The document's shell recipe: a heredoc, so a trailing newline.
	beadsShellExample = "{\n  \"holder\": \"my-tool\",\n  \"pid\": 4242,\n  \"hostname\": \"dev-machine\",\n  \"started_at\": \"2025-10-25T12:00:00Z\",\n  \"version\": \"1.0.0\"\n}\n"
)

var beadsDocHolder = Holder{Lock: "beads", RequestID: "req_01", Actor: "vc-executor", Intent: "sync",
	IntentVersion: "1.0.0", HostID: "dev-machine", PID: 12345, CreatedAt: utc("2025-10-25T12:00:00Z"), TTL: time.Minute}

var beadsParsed = Holder{RequestID: "beads:12345:1761393600", Actor: "vc-executor", IntentVersion: "1.0.0",
	HostID: "dev-machine", PID: 12345, CreatedAt: utc("2025-10-25T12:00:00Z"), HeartbeatAt: utc("2025-10-25T12:00:00Z")}

func TestBeadsGolden(t *testing.T) {
	checkGolden(t, Beads, beadsDocHolder, beadsGolden)
	h := beadsDocHolder
	h.CreatedAt = time.Date(2025, 10, 25, 14, 0, 0, 987654321, time.FixedZone("CEST", 2*3600)) // UTC, whole seconds
	checkGolden(t, Beads, h, beadsGolden)
	// version is always written (the Go struct has no omitempty); Go's
	// HTML-safe escaping applies.
	h = beadsDocHolder
	h.IntentVersion = ""
	h.Actor = "ci<&>runner"
	checkGolden(t, Beads, h, "{\n  \"holder\": \"ci\\u003c\\u0026\\u003erunner\",\n  \"pid\": 12345,\n  \"hostname\": \"dev-machine\",\n  \"started_at\": \"2025-10-25T12:00:00Z\",\n  \"version\": \"\"\n}")
}

func TestBeadsRoundTrip(t *testing.T) {
	checkRoundTrip(t, Beads, beadsDocHolder, beadsParsed)
}

func TestBeadsSeedExampleParses(t *testing.T) {
	for _, data := range []string{beadsDocExample, beadsGolden} {
		got, err := Beads.Parse([]byte(data))
		if err != nil {
			t.Fatalf("Parse(%q): %v", data, err)
		}
		checkEqualHolder(t, got, beadsParsed)
		if got.Actor != "vc-executor" || got.IntentVersion != "1.0.0" {
			t.Errorf("Parse = %+v", got)
		}
	}
	got, err := Beads.Parse([]byte(beadsShellExample))
	if err != nil || got.Actor != "my-tool" || got.PID != 4242 {
		t.Errorf("Parse(shell example) = %+v, %v", got, err)
	}
	// NewExclusiveLock's time.Now(): local offset and nanoseconds; version
	// optional; unknown fields ignored.
	got, err = Beads.Parse([]byte(`{"holder":"x","pid":1,"hostname":"h","started_at":"2025-10-25T14:00:00.123456789+02:00","extra":true}`))
	if err != nil || !got.CreatedAt.Equal(utc("2025-10-25T12:00:00.123456789Z")) || got.IntentVersion != "" {
		t.Errorf("Parse(Go time.Now) = %+v, %v", got, err)
	}
}

var beadsCorrupt = []string{
	`{"holder": "vc-executor", "pid": 12345`, // unexpected EOF, the document's own log example
	`{"pid": 12345, "hostname": "h", "started_at": "2025-10-25T12:00:00Z"}`,
	`{"holder": "x", "pid": 0, "hostname": "h", "started_at": "2025-10-25T12:00:00Z"}`,
	`{"holder": "x", "pid": "12345", "hostname": "h", "started_at": "2025-10-25T12:00:00Z"}`,
	`{"holder": "x", "pid": 1, "hostname": "", "started_at": "2025-10-25T12:00:00Z"}`,
	`{"holder": "x", "pid": 1, "hostname": "h"}`,
	`{"holder": "x", "pid": 1, "hostname": "h", "started_at": "2025-10-25 12:00"}`,
	`null`,
	`[]`,
	`{"holder": "x", "pid": 1, "hostname": "h", "started_at": "2025-10-25T12:00:00Z"} trailing`,
}

func TestBeadsMalformed(t *testing.T) {
	for _, data := range beadsCorrupt {
		malformedOf(t, Beads, data)
	}
}

func TestBeadsJudge(t *testing.T) {
	h := beadsParsed // dev-machine, pid 12345
	now := h.CreatedAt.Add(30 * 24 * time.Hour)
	runJudge(t, Beads, []judgeCase{
		{name: "same host, pid alive", h: h, now: now, env: Env{HostID: "dev-machine", Probe: probeAlive},
			state: events.StateHeld, reason: ReasonPIDAlive},
		{name: "same host, EPERM is alive", h: h, now: now, env: Env{HostID: "dev-machine", Probe: probeEPERM},
			state: events.StateHeld, reason: ReasonPIDAlive},
		{name: "same host, ESRCH is stale: dead", h: h, now: now, env: Env{HostID: "dev-machine", Probe: probeGone},
			state: events.StateDead, reason: ReasonPIDDead},
		{name: "hostname compare is case-insensitive", h: h, now: now, env: Env{HostID: "DEV-Machine", Probe: probeGone},
			state: events.StateDead, reason: ReasonPIDDead},
		{name: "same host, unprobeable: only ESRCH removes", h: h, now: now, env: Env{HostID: "dev-machine", Probe: probeUnknown},
			state: events.StateHeld, reason: ReasonPIDUnknown},
		{name: "other host is always valid", h: h, now: now, env: Env{HostID: "ci-runner-7", Probe: probeMustNot(t)},
			state: events.StateHeld, reason: ReasonRemoteHost},
		{name: "unknown own host: not judged by pid", h: h, now: now, env: Env{Probe: probeMustNot(t)},
			state: events.StateHeld, reason: ReasonRemoteHost},
		{name: "no age limit of its own", h: h, now: h.CreatedAt.Add(1000 * time.Hour), env: Env{HostID: "dev-machine", Probe: probeAlive},
			state: events.StateHeld, reason: ReasonPIDAlive},
		{name: "--max-age past, other host", h: h, now: h.CreatedAt.Add(2 * time.Hour), env: Env{HostID: "ci-runner-7", Probe: probeMustNot(t), MaxAge: time.Hour},
			state: events.StateStale, reason: ReasonMaxAge},
		{name: "--max-age under", h: h, now: h.CreatedAt.Add(30 * time.Minute), env: Env{HostID: "ci-runner-7", Probe: probeMustNot(t), MaxAge: time.Hour},
			state: events.StateHeld, reason: ReasonRemoteHost},
		{name: "dead wins over --max-age", h: h, now: h.CreatedAt.Add(2 * time.Hour), env: Env{HostID: "dev-machine", Probe: probeGone, MaxAge: time.Hour},
			state: events.StateDead, reason: ReasonPIDDead},
		{name: "malformed fails safe", parseErr: malformedOf(t, Beads, beadsCorrupt[0]), now: now, env: Env{HostID: "dev-machine", Probe: probeGone},
			state: events.StateHeld, reason: ReasonCorrupt, failSafe: true},
	})
}
