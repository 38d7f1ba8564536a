package ledger

import (
	"context"
	"database/sql"
	"path/filepath"
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

// A clock stepped back between an acquisition and its release (NTP, a
// restored VM): the release is recorded, with a held duration of 0, not
// refused by the schema's minimum, which left the holder unable to give
// its lock up.
func TestAReleaseAfterTheClockSteppedBackIsRecorded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	l, err := Open(ctx, root, Unsigned(), WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	id := Identity{RequestID: "req_back", Actor: "clock"}
	if _, err := l.TryAcquire(ctx, AcquireRequest{Lock: "prod", Identity: id, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(-20 * time.Minute)
	if _, err := l.Release(ctx, ReleaseRequest{Lock: "prod", Identity: id}); err != nil {
		t.Fatalf("release after the clock stepped back: %v", err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(root, DBFile)+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var held float64
	if err := db.QueryRow(`SELECT json_extract(body, '$.held_duration_seconds') FROM events WHERE type = 'lock_released'`).Scan(&held); err != nil || held != 0 {
		t.Errorf("held_duration_seconds %v (%v), want 0", held, err)
	}
}

// A holder whose recorded acquisition is ahead of the reading clock (the
// writer's host ahead of this one, or PostgreSQL's clock ahead of the
// host that wrote): status says it has been held 0 s so far, exclusive
// and shared holders alike, never a negative time.
func TestStatusOfAHolderFromAClockAheadIsHeldForNoNegativeTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	l, err := Open(ctx, root, Unsigned(), WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.TryAcquire(ctx, AcquireRequest{Lock: "prod", Identity: Identity{RequestID: "req_ahead", Actor: "ahead"}, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	for _, rid := range []string{"req_r1", "req_r2"} {
		if _, err := l.TryAcquire(ctx, AcquireRequest{Lock: "db", Identity: Identity{RequestID: rid, Actor: "ahead"}, TTL: time.Hour, Shared: true}); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(-90 * time.Second)
	for _, lock := range []string{"prod", "db"} {
		s, err := l.Status(ctx, lock)
		if err != nil {
			t.Fatal(err)
		}
		if s.State != events.StateHeld || s.HeldFor != 0 {
			t.Errorf("%s: %s, held for %s; want held, for 0s", lock, s.State, s.HeldFor)
		}
		for _, x := range s.Shared {
			if x.HeldFor != 0 {
				t.Errorf("%s: shared holder %s held for %s, want 0s", lock, x.Holder.RequestID, x.HeldFor)
			}
		}
	}
}
