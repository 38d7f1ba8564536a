package formats

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/proc"
)

// BSO's documented example lock file, comments and all.
const bsoDocExample = `# .sprint-running
pid: 12345                                    # 当前进程 PID
session_id: "sprint-2026-02-07-001"           # Sprint 会话唯一标识
started_at: "2026-02-07T22:30:00Z"            # 锁创建时间（ISO 8601 UTC）
epic_spec: "epic5"                            # 正在执行的 Epic 标识
lock_version: 1                               # 锁文件格式版本（向后兼容）
`

// BSO's template filled with the document's example values: what
// BSO writes.
const bsoGolden = `pid: 12345
session_id: "sprint-2026-02-07-001"
started_at: "2026-02-07T22:30:00Z"
epic_spec: "epic5"
lock_version: 1
`

var bsoDocHolder = Holder{Lock: "sprint", RequestID: "sprint-2026-02-07-001", Actor: "bso", Intent: "epic5",
	HostID: "dev-machine", PID: 12345, CreatedAt: utc("2026-02-07T22:30:00Z"), TTL: 15 * time.Minute}

// bsoParsed is what Parse gives for the document's example.
var bsoParsed = Holder{RequestID: "sprint-2026-02-07-001", Intent: "epic5", PID: 12345,
	CreatedAt: utc("2026-02-07T22:30:00Z"), HeartbeatAt: utc("2026-02-07T22:30:00Z")}

func TestBSOGolden(t *testing.T) {
	checkGolden(t, BSO, bsoDocHolder, bsoGolden)
	// epic_spec comes from metadata when it is given there.
	h := bsoDocHolder
	h.Intent = "sprint-run"
	h.Metadata = map[string]string{"epic_spec": "epic5"}
	h.CreatedAt = h.CreatedAt.Add(700 * time.Millisecond) // whole seconds
	checkGolden(t, BSO, h, bsoGolden)
	// Strings that need YAML escapes stay one double-quoted line.
	h = bsoDocHolder
	h.Intent = "say \"hi\"\\ \t\n\x07 – ok\u2028"
	checkGolden(t, BSO, h, strings.Replace(bsoGolden, `epic_spec: "epic5"`, `epic_spec: "say \"hi\"\\ \t\n\x07 – ok\u2028"`, 1))
}

func TestBSORoundTrip(t *testing.T) {
	checkRoundTrip(t, BSO, bsoDocHolder, bsoParsed)
	for _, s := range []string{"", "a: b # c", "- x", "'single'", "{flow}", "\x00\x1b\x7f\u0085\u00a0\ufeff", "null", "~", "12345", "émoji 🎉", "\xff", "  padded  ", "line1\r\nline2"} {
		h := bsoDocHolder
		h.Intent = s
		want := bsoParsed
		want.Intent = strings.ToValidUTF8(s, "\uFFFD")
		checkRoundTrip(t, BSO, h, want)
	}
}

func TestBSOSeedExampleParses(t *testing.T) {
	got, err := BSO.Parse([]byte(bsoDocExample))
	if err != nil {
		t.Fatal(err)
	}
	checkEqualHolder(t, got, bsoParsed)
	// Other YAML spellings of the same lock.
	for _, data := range []string{
		"pid: 12345\nsession_id: sprint-2026-02-07-001\nstarted_at: 2026-02-07T22:30:00Z\nepic_spec: epic5\nlock_version: 1\n",
		"{pid: 12345, session_id: 'sprint-2026-02-07-001', started_at: '2026-02-07T22:30:00Z', epic_spec: epic5, lock_version: 1}",
		"---\npid: \"12345\"\nsession_id: \"sprint-2026-02-07-001\"\nstarted_at: \"2026-02-07T23:30:00+01:00\"\nepic_spec: \"epic5\"\n",
		"pid: 12345\nsession_id: \"sprint-2026-02-07-001\"\nstarted_at: \"2026-02-07T22:30:00Z\"\nepic_spec: \"epic5\"\nlock_version: ~\n",
	} {
		got, err := BSO.Parse([]byte(data))
		if err != nil {
			t.Errorf("Parse(%q): %v", data, err)
			continue
		}
		checkEqualHolder(t, got, bsoParsed)
	}
	// Without a session id the holder still gets a request id.
	got, err = BSO.Parse([]byte("pid: 7\nstarted_at: \"2026-02-07T22:30:00Z\"\n"))
	if err != nil || got.RequestID != "bso:7:1770503400" {
		t.Errorf("Parse(no session_id) = %+v, %v", got, err)
	}
}

func checkEqualHolder(t *testing.T, got, want Holder) {
	t.Helper()
	if got.RequestID != want.RequestID || got.Intent != want.Intent || got.PID != want.PID ||
		!got.CreatedAt.Equal(want.CreatedAt) || !got.HeartbeatAt.Equal(want.HeartbeatAt) || got.HostID != want.HostID {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

var bsoCorrupt = []string{
	"pid: 12345\nsession_id: \"unterminated\n",
	"pid: [1, 2]\nstarted_at: \"2026-02-07T22:30:00Z\"\n",
	"pid: 0\nstarted_at: \"2026-02-07T22:30:00Z\"\n",
	"pid: -5\nstarted_at: \"2026-02-07T22:30:00Z\"\n",
	"pid: 1.5\nstarted_at: \"2026-02-07T22:30:00Z\"\n",
	"pid: true\nstarted_at: \"2026-02-07T22:30:00Z\"\n",
	"pid: 12345\nstarted_at: \"yesterday\"\n",
	"pid: 12345\n",
	"session_id: \"s\"\nstarted_at: \"2026-02-07T22:30:00Z\"\n",
	"pid: 12345\npid: 12346\nstarted_at: \"2026-02-07T22:30:00Z\"\n",
	"pid: 12345\nstarted_at: \"2026-02-07T22:30:00Z\"\nepic_spec: {a: b}\n",
	"- pid: 12345\n",
	"just a string\n",
	"pid: 1\nstarted_at: \"2026-02-07T22:30:00Z\"\n---\npid: 2\n",
	"\t",
	"a: &a [*a, *a]\n",
	// Not BSO's template: a key it does not have, or a bad lock_version.
	"---\npid: \"12345\"\nsession_id: \"s\"\nstarted_at: \"2026-02-07T23:30:00+01:00\"\nextra: [1, 2]\n",
	"id: &s \"s\"\npid: 12345\nsession_id: *s\nstarted_at: \"2026-02-07T22:30:00Z\"\n",
	"? [pid]\n: 1\npid: 12345\nstarted_at: \"2026-02-07T22:30:00Z\"\n",
	"pid: 12345\nstarted_at: \"2026-02-07T22:30:00Z\"\nlock_version: 0\n",
	"pid: 12345\nstarted_at: \"2026-02-07T22:30:00Z\"\nlock_version: v1\n",
	"service: api\npid: 12345\nstarted_at: 2026-02-07T22:30:00Z\nport: 8080\n",
}

func TestBSOMalformed(t *testing.T) {
	for _, data := range bsoCorrupt {
		malformedOf(t, BSO, data)
	}
}

func TestBSOJudge(t *testing.T) {
	start := utc("2026-02-07T22:30:00Z")
	h := bsoParsed
	at := func(d time.Duration) time.Time { return start.Add(d) }
	env := func(p func(int) proc.Liveness) Env { return Env{HostID: "dev-machine", Probe: p} }
	remote := bsoDocHolder // a holder with a host, as the ledger may hand Judge
	remote.HostID = "elsewhere"
	runJudge(t, BSO, []judgeCase{
		{name: "pid alive, 2.5h old", h: h, now: at(150 * time.Minute), env: env(probeAlive),
			state: events.StateHeld, reason: ReasonPIDAlive},
		{name: "EPERM is alive", h: h, now: at(150 * time.Minute), env: env(probeEPERM),
			state: events.StateHeld, reason: ReasonPIDAlive},
		{name: "dead pid is a zombie, dead", h: h, now: at(150 * time.Minute), env: env(probeGone),
			state: events.StateDead, reason: ReasonPIDDead, zombie: true},
		{name: "dead pid and old", h: h, now: at(48 * time.Hour), env: env(probeGone),
			state: events.StateDead, reason: ReasonPIDDead, zombie: true},
		{name: "unprobeable pid is a zombie, stale", h: h, now: at(time.Hour), env: env(probeUnknown),
			state: events.StateStale, reason: ReasonPIDUnknown, zombie: true},
		{name: "nil probe is unprobeable", h: h, now: at(time.Hour), env: Env{},
			state: events.StateStale, reason: ReasonPIDUnknown, zombie: true},
		{name: "alive but older than 24h: suspected zombie, stale", h: h, now: at(24*time.Hour + time.Second), env: env(probeAlive),
			state: events.StateStale, reason: ReasonMaxAge, zombie: true},
		{name: "exactly 24h is not over the threshold", h: h, now: at(24 * time.Hour), env: env(probeAlive),
			state: events.StateHeld, reason: ReasonPIDAlive},
		{name: "max-age under the limit", h: h, now: at(30 * time.Minute), env: Env{Probe: probeAlive, MaxAge: time.Hour},
			state: events.StateHeld, reason: ReasonPIDAlive},
		{name: "max-age past the limit", h: h, now: at(90 * time.Minute), env: Env{Probe: probeAlive, MaxAge: time.Hour},
			state: events.StateStale, reason: ReasonMaxAge, zombie: true},
		{name: "max-age replaces the 24h default", h: h, now: at(30 * time.Hour), env: Env{Probe: probeAlive, MaxAge: 48 * time.Hour},
			state: events.StateHeld, reason: ReasonPIDAlive},
		{name: "holder on another host: pid not judged", h: remote, now: at(time.Hour), env: Env{HostID: "dev-machine", Probe: probeMustNot(t)},
			state: events.StateHeld, reason: ReasonRemoteHost},
		{name: "corrupt YAML is a zombie, dead", parseErr: malformedOf(t, BSO, bsoCorrupt[0]), now: start, env: env(probeAlive),
			state: events.StateDead, reason: ReasonCorrupt, zombie: true},
	})
}

func TestBSOCheck(t *testing.T) {
	start := utc("2026-02-07T22:30:00Z")
	file := []byte(bsoGolden)
	info := func(alive, zombie bool, hours float64) BSOLockInfo {
		return BSOLockInfo{Exists: true, PID: 12345, SessionID: "sprint-2026-02-07-001", StartedAt: "2026-02-07T22:30:00Z",
			EpicSpec: "epic5", AgeHours: hours, PIDAlive: alive, IsZombie: zombie}
	}
	cases := []struct {
		name   string
		data   []byte
		exists bool
		now    time.Time
		env    Env
		status string
		info   BSOLockInfo
	}{
		{"clean", nil, false, start, Env{Probe: probeAlive}, "clean", BSOLockInfo{}},
		{"blocked", file, true, start.Add(150 * time.Minute), Env{Probe: probeAlive}, "blocked", info(true, false, 2.5)},
		{"blocked, EPERM", file, true, start.Add(150 * time.Minute), Env{Probe: probeEPERM}, "blocked", info(true, false, 2.5)},
		{"zombie by age", file, true, start.Add(25 * time.Hour), Env{Probe: probeAlive}, "zombie-detected", info(true, true, 25)},
		{"zombie by --max-age", file, true, start.Add(2 * time.Hour), Env{Probe: probeAlive, MaxAge: time.Hour}, "zombie-detected", info(true, true, 2)},
		{"zombie by dead pid", file, true, start.Add(time.Hour), Env{Probe: probeGone}, "zombie-detected", info(false, true, 1)},
		{"zombie: pid check failed", file, true, start.Add(time.Hour), Env{Probe: probeUnknown}, "zombie-detected", info(false, true, 1)},
		{"corrupt YAML", []byte(bsoCorrupt[0]), true, start, Env{Probe: probeAlive}, "zombie-detected", BSOLockInfo{Exists: true, IsZombie: true}},
		{"empty file", []byte{}, true, start, Env{Probe: probeAlive}, "zombie-detected", BSOLockInfo{Exists: true, IsZombie: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := BSOCheck(c.data, c.exists, c.now, c.env)
			if st.Status != c.status || st.Mode != "check" || st.LockInfo != c.info || st.Message == "" || st.Errors == nil {
				t.Errorf("BSOCheck = %+v\nwant status %q, lock_info %+v", st, c.status, c.info)
			}
		})
	}
	// The return object's JSON: the document's field names and spellings.
	st := BSOCheck(file, true, start.Add(150*time.Minute), Env{Probe: probeAlive})
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"status":"blocked","mode":"check","lock_info":{"exists":true,"pid":12345,"session_id":"sprint-2026-02-07-001","started_at":"2026-02-07T22:30:00Z","epic_spec":"epic5","age_hours":2.5,"pid_alive":true,"is_zombie":false},"message":"Sprint already running (PID: 12345, session: sprint-2026-02-07-001, started: 2026-02-07T22:30:00Z)","errors":[]}`
	if string(b) != want {
		t.Errorf("BSOCheck JSON =\n%s\nwant\n%s", b, want)
	}
	b, _ = json.Marshal(BSOCheck(nil, false, start, Env{}))
	if !strings.HasPrefix(string(b), `{"status":"clean","mode":"check","lock_info":{"exists":false,"age_hours":0,"pid_alive":false,"is_zombie":false}`) {
		t.Errorf("clean JSON = %s", b)
	}
}
