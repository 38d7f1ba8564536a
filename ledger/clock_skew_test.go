package ledger

import (
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/formats"
	"github.com/lockledger/lockledger/internal/proc"
)

// The ledger's own holder is judged by the rule the formats use: a
// heartbeat further ahead than formats.MaxClockSkew is not fresh.
func TestJudgeAHeartbeatAheadOfTheClock(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	self := Host{ID: "here", BootID: "boot"}
	holder := func(beat time.Time) *holding {
		return &holding{rec: events.Record{LockName: "prod", RequestID: "req_1", HostID: "elsewhere", PID: 42, TTLSeconds: 900},
			created: now.Add(-time.Minute), heartbeat: beat}
	}
	var probe proc.Probe = &proc.Local{}
	cases := []struct {
		name  string
		beat  time.Time
		state string
	}{
		{"in 2030", time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), events.StateStale},
		{"just beyond the allowance", now.Add(formats.MaxClockSkew + time.Second), events.StateStale},
		{"within the allowance", now.Add(formats.MaxClockSkew - time.Second), events.StateHeld},
		{"a minute ago", now.Add(-time.Minute), events.StateHeld},
	}
	for _, c := range cases {
		h := holder(c.beat)
		if got, _ := judge(h, now, self, probe, 0); got != c.state {
			t.Errorf("heartbeat %s: judged %s, want %s", c.name, got, c.state)
		}
		if c.state == events.StateStale && !h.staleSince(now).Equal(now) {
			t.Errorf("heartbeat %s: stale since %s, want the judging instant %s", c.name, h.staleSince(now), now)
		}
	}
}
