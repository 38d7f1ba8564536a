package formats

import (
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
)

// A time further ahead of the judging clock than MaxClockSkew is no
// evidence of a live holder: every format that judges by time calls it
// stale (clock_skew); within the allowance it is trusted as before.
func TestJudgeClockSkew(t *testing.T) {
	now := utc("2026-02-08T00:00:00Z")
	far := utc("2030-01-01T00:00:00Z")
	near := now.Add(MaxClockSkew - time.Second)
	local := Env{HostID: "tower-01", Probe: probeAlive}
	tf := func(hb time.Time) Holder {
		h := towerFleetSpecHolder
		h.CreatedAt, h.HeartbeatAt = now.Add(-time.Minute), hb
		return h
	}
	runJudge(t, TowerFleet, []judgeCase{
		{name: "heartbeat in 2030", h: tf(far), now: now, state: events.StateStale, reason: ReasonClockSkew},
		{name: "heartbeat just past the allowance", h: tf(now.Add(MaxClockSkew + time.Second)), now: now, state: events.StateStale, reason: ReasonClockSkew},
		{name: "heartbeat within the allowance", h: tf(near), now: now, state: events.StateHeld, reason: ReasonActive},
	})
	runJudge(t, GitClaw, []judgeCase{
		{name: "acquired in 2030", h: Holder{RequestID: "run-1", CreatedAt: far, HeartbeatAt: far, TTL: GitClawTTL}, now: now,
			state: events.StateStale, reason: ReasonClockSkew},
		{name: "acquired within the allowance", h: Holder{RequestID: "run-1", CreatedAt: near, HeartbeatAt: near, TTL: GitClawTTL}, now: now,
			state: events.StateHeld, reason: ReasonActive},
	})
	runJudge(t, BSO, []judgeCase{
		{name: "live pid, started in 2030", h: Holder{PID: 42, CreatedAt: far, HeartbeatAt: far}, now: now, env: local,
			state: events.StateStale, reason: ReasonClockSkew, zombie: true},
		{name: "dead pid, started in 2030", h: Holder{PID: 42, CreatedAt: far, HeartbeatAt: far}, now: now,
			env: Env{HostID: "tower-01", Probe: probeGone}, state: events.StateDead, reason: ReasonPIDDead, zombie: true},
		{name: "live pid, started within the allowance", h: Holder{PID: 42, CreatedAt: near, HeartbeatAt: near}, now: now, env: local,
			state: events.StateHeld, reason: ReasonPIDAlive},
	})
	remote := Holder{Actor: "alice", HostID: "tower-02", PID: 42, CreatedAt: far, HeartbeatAt: far}
	for _, f := range []Format{Beads, Prodigy} {
		runJudge(t, f, []judgeCase{
			// Neither judges by time unless --max-age asks: a remote lock stays valid.
			{name: "remote, created in 2030", h: remote, now: now, env: local, state: events.StateHeld, reason: ReasonRemoteHost},
			{name: "remote, created in 2030, --max-age", h: remote, now: now, env: Env{HostID: "tower-01", MaxAge: time.Hour},
				state: events.StateStale, reason: ReasonClockSkew},
		})
	}
	v := TowerFleet.Judge(tf(far), nil, now, Env{})
	if !strings.Contains(v.Detail, "in the future") || !strings.Contains(v.Detail, "clock skew") {
		t.Errorf("Detail = %q, want it to say the heartbeat is in the future (clock skew)", v.Detail)
	}
}

func TestBSOCheckStartedInTheFuture(t *testing.T) {
	now := utc("2026-02-08T00:00:00Z")
	data := "pid: 42\nsession_id: \"s-1\"\nstarted_at: \"2030-01-01T00:00:00Z\"\nepic_spec: \"e\"\nlock_version: 1\n"
	st := BSOCheck([]byte(data), true, now, Env{HostID: "tower-01", Probe: probeAlive})
	if st.Status != BSOStatusZombieDetected || !st.LockInfo.IsZombie || !strings.Contains(st.Message, "in the future") {
		t.Errorf("BSOCheck = %+v, want zombie-detected, started in the future", st)
	}
}
