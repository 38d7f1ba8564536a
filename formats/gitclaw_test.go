package formats

import (
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
)

// GITCLAW-LOCK.ts acquireLock for issue #42 (the document's example issue),
// runId = GITHUB_RUN_ID: JSON.stringify(lock, null, 2) + "\n".
const gitclawGolden = "{\n  \"issueNumber\": 42,\n  \"runId\": \"12345678901\",\n  \"acquiredAt\": \"2026-02-07T22:30:00.123Z\",\n  \"pid\": 2087\n}\n"

// Outside Actions runId falls back to String(Date.now()).
const gitclawLocalExample = "{\n  \"issueNumber\": 10,\n  \"runId\": \"1770503400123\",\n  \"acquiredAt\": \"2026-02-07T22:30:00.123Z\",\n  \"pid\": 31337\n}\n"

var gitclawDocHolder = Holder{Lock: "42", RequestID: "12345678901", Actor: "gitclaw", Intent: "agent",
	HostID: "runner", PID: 2087, CreatedAt: utc("2026-02-07T22:30:00.123456Z"), TTL: time.Hour}

var gitclawParsed = Holder{Lock: "42", RequestID: "12345678901", PID: 2087, TTL: 10 * time.Minute,
	CreatedAt: utc("2026-02-07T22:30:00.123Z"), HeartbeatAt: utc("2026-02-07T22:30:00.123Z")}

func TestGitClawGolden(t *testing.T) {
	checkGolden(t, GitClaw, gitclawDocHolder, gitclawGolden)
	// toISOString always has milliseconds; issueNumber from metadata.
	h := gitclawDocHolder
	h.Lock = "issue-42"
	h.Metadata = map[string]string{"issue_number": "42"}
	h.CreatedAt = utc("2026-02-07T23:30:00.123999+01:00")
	checkGolden(t, GitClaw, h, gitclawGolden)
	h.CreatedAt = utc("2026-02-07T22:30:00Z")
	h.RequestID = "run \"x\"\n"
	checkGolden(t, GitClaw, h, "{\n  \"issueNumber\": 42,\n  \"runId\": \"run \\\"x\\\"\\n\",\n  \"acquiredAt\": \"2026-02-07T22:30:00.000Z\",\n  \"pid\": 2087\n}\n")
}

func TestGitClawRoundTrip(t *testing.T) {
	checkRoundTrip(t, GitClaw, gitclawDocHolder, gitclawParsed)
}

func TestGitClawSeedExampleParses(t *testing.T) {
	for _, c := range []struct {
		data string
		want Holder
	}{
		{gitclawGolden, gitclawParsed},
		{gitclawLocalExample, Holder{Lock: "10", RequestID: "1770503400123", PID: 31337, TTL: 10 * time.Minute,
			CreatedAt: utc("2026-02-07T22:30:00.123Z"), HeartbeatAt: utc("2026-02-07T22:30:00.123Z")}},
		// What GitClaw itself tolerates in LockInfo's members: new Date(ms),
		// a numeric runId, no pid.
		{`{"issueNumber":7,"acquiredAt":1770503400123,"runId":99,"pid":5}`, Holder{Lock: "7", RequestID: "99", PID: 5, TTL: 10 * time.Minute,
			CreatedAt: utc("2026-02-07T22:30:00.123Z"), HeartbeatAt: utc("2026-02-07T22:30:00.123Z")}},
		{`{"issueNumber":7,"runId":"","acquiredAt":"2026-02-07T22:30:00Z"}`, Holder{Lock: "7", RequestID: "gitclaw:0:1770503400", TTL: 10 * time.Minute,
			CreatedAt: utc("2026-02-07T22:30:00Z"), HeartbeatAt: utc("2026-02-07T22:30:00Z")}},
	} {
		got, err := GitClaw.Parse([]byte(c.data))
		if err != nil {
			t.Errorf("Parse(%q): %v", c.data, err)
			continue
		}
		if got.Lock != c.want.Lock || got.RequestID != c.want.RequestID || got.PID != c.want.PID || got.TTL != c.want.TTL ||
			!got.CreatedAt.Equal(c.want.CreatedAt) || !got.HeartbeatAt.Equal(c.want.HeartbeatAt) {
			t.Errorf("Parse(%q) = %+v, want %+v", c.data, got, c.want)
		}
	}
}

var gitclawCorrupt = []string{
	"{\n  \"issueNumber\": 42,\n  \"runId\": \"1",
	`{"issueNumber":42,"runId":"1","pid":1}`,
	`{"issueNumber":42,"runId":"1","acquiredAt":"not a date","pid":1}`,
	`{"issueNumber":42,"runId":"1","acquiredAt":true,"pid":1}`,
	`null`,
	`42`,
	// Not LockInfo: a member it does not have, or one of its own missing.
	`{"issueNumber":42,"acquiredAt":1770503400123,"runId":"99","pid":5,"extra":{}}`,
	`{"acquiredAt":"2026-02-07T22:30:00Z"}`,
	`{"runId":"1","acquiredAt":"2026-02-07T22:30:00Z","pid":1}`,
	`{"issueNumber":42,"acquiredAt":"2026-02-07T22:30:00Z","pid":1}`,
	`{"issueNumber":"42","runId":"1","acquiredAt":"2026-02-07T22:30:00Z","pid":1}`,
	`{"issueNumber":-1,"runId":"1","acquiredAt":"2026-02-07T22:30:00Z","pid":1}`,
	`{"issueNumber":4.5,"runId":"1","acquiredAt":"2026-02-07T22:30:00Z","pid":1}`,
	`{"issueNumber":42,"runId":{},"acquiredAt":"2026-02-07T22:30:00Z","pid":1}`,
	`{"name":"app","version":"1.0.0","acquiredAt":"2026-02-07T22:30:00Z"}`,
}

func TestGitClawMalformed(t *testing.T) {
	for _, data := range gitclawCorrupt {
		malformedOf(t, GitClaw, data)
	}
}

func TestGitClawJudge(t *testing.T) {
	h := gitclawParsed
	at := func(d time.Duration) time.Time { return h.CreatedAt.Add(d) }
	env := Env{HostID: "runner", Probe: probeMustNot(t)} // GitClaw never judges the pid
	withMax := func(d time.Duration) Env { e := env; e.MaxAge = d; return e }
	runJudge(t, GitClaw, []judgeCase{
		{name: "5 min old", h: h, now: at(5 * time.Minute), env: env,
			state: events.StateHeld, reason: ReasonActive},
		{name: "just under the TTL", h: h, now: at(10*time.Minute - time.Millisecond), env: env,
			state: events.StateHeld, reason: ReasonActive},
		{name: "age equal to the TTL is stale (lockAge < TTL is valid)", h: h, now: at(10 * time.Minute), env: env,
			state: events.StateStale, reason: ReasonTTLExpired},
		{name: "older than the TTL", h: h, now: at(11 * time.Minute), env: env,
			state: events.StateStale, reason: ReasonTTLExpired},
		{name: "dead pid is not looked at", h: h, now: at(time.Minute), env: env,
			state: events.StateHeld, reason: ReasonActive},
		{name: "zero TTL uses LOCK_TTL_MS", h: Holder{RequestID: "r", CreatedAt: h.CreatedAt}, now: at(9 * time.Minute), env: env,
			state: events.StateHeld, reason: ReasonActive},
		{name: "--max-age past", h: h, now: at(2 * time.Minute), env: withMax(time.Minute),
			state: events.StateStale, reason: ReasonMaxAge},
		{name: "--max-age under", h: h, now: at(2 * time.Minute), env: withMax(5 * time.Minute),
			state: events.StateHeld, reason: ReasonActive},
		{name: "corrupt is removed like an expired lock: stale", parseErr: malformedOf(t, GitClaw, gitclawCorrupt[0]), now: at(0), env: env,
			state: events.StateStale, reason: ReasonCorrupt},
	})
}
