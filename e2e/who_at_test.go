package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/clitest"
)

type whoAtJSON struct {
	At      string `json:"at"`
	AtLocal string `json:"at_local"`
	Zone    string `json:"zone"`
	State   string `json:"state"`
	Holder  *struct {
		RequestID string `json:"request_id"`
		Actor     string `json:"actor"`
	} `json:"holder"`
	Began *struct {
		Seq               int64   `json:"seq"`
		Type              string  `json:"type"`
		Reason            string  `json:"reason"`
		Note              string  `json:"note"`
		PreviousRequestID string  `json:"previous_request_id"`
		WaitedSeconds     float64 `json:"waited_seconds"`
	} `json:"began"`
	Queue []struct {
		Actor         string  `json:"actor"`
		Since         string  `json:"since"`
		WaitedSeconds float64 `json:"waited_seconds"`
	} `json:"queue"`
}

// TestWhoAtSaysHowTheHoldingBeganAndWhoWaited: who --at answers the whole
// question at an instant: the holder, how its holding began (an acquire,
// or a steal with its reason and words and the holding it took), and the
// waiters then with how long each had waited; --at takes the local
// wall-clock form, and the answer names the zone it was read in.
func TestWhoAtSaysHowTheHoldingBeganAndWhoWaited(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	first := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "deploy", "--holder", "none", "--ttl", "5m", "--actor", "ci-bot").Stdout)
	startQueuedWaiter(t, ctx, root, "deploy", "bob", filepath.Join(t.TempDir(), "order"))
	clitest.Must(t, 0, root, "steal", "deploy", "--active", "--yes", "--reason", "INC-42: runner gone", "--actor", "oncall")
	stolen := clitest.Strings(t, root, `SELECT json_extract(body, '$.at') FROM events WHERE type = 'lock_stolen'`)
	if len(stolen) != 1 {
		t.Fatalf("lock_stolen events: %v", stolen)
	}
	stealAt, err := events.ParseTime(stolen[0])
	if err != nil {
		t.Fatal(err)
	}
	who := func(env []string, at string) whoAtJSON {
		t.Helper()
		r := clitest.RunWith(t, root, env, "", "who", "deploy", "--at", at, "--json")
		var w whoAtJSON
		if err := json.Unmarshal([]byte(r.Stdout), &w); r.Code != 0 || err != nil {
			t.Fatalf("who --at %s: exit %d, %v\n%s%s", at, r.Code, err, r.Stdout, r.Stderr)
		}
		return w
	}
	before := who(nil, events.FormatTime(stealAt.Add(-time.Nanosecond)))
	if before.Holder == nil || before.Holder.RequestID != first || before.Began == nil || before.Began.Type != "lock_acquired" {
		t.Errorf("just before the steal: holder %+v began %+v, want %s acquired", before.Holder, before.Began, first)
	}
	if len(before.Queue) != 1 || before.Queue[0].Actor != "bob" || before.Queue[0].WaitedSeconds <= 0 {
		t.Errorf("just before the steal: queue %+v, want bob, waiting", before.Queue)
	} else if since, _ := events.ParseTime(before.Queue[0].Since); stealAt.Add(-time.Nanosecond).Sub(since).Seconds() != before.Queue[0].WaitedSeconds {
		t.Errorf("bob waited %vs by then, want the time since %s", before.Queue[0].WaitedSeconds, before.Queue[0].Since)
	}
	after := who(nil, events.FormatTime(stealAt))
	if b := after.Began; after.Holder == nil || after.Holder.Actor != "oncall" || b == nil || b.Type != "lock_stolen" ||
		b.Reason != events.ReasonForcedActive || b.Note != "INC-42: runner gone" || b.PreviousRequestID != first {
		t.Errorf("at the steal: holder %+v began %+v, want oncall's steal of %s with its reason", after.Holder, after.Began, first)
	}
	if len(after.Queue) != 1 || after.Queue[0].Actor != "bob" {
		t.Errorf("at the steal: queue %+v, want bob still waiting", after.Queue)
	}
	// The same instant's next whole second, written on Kolkata's clocks.
	kolkata := []string{"TZ=Asia/Kolkata"}
	next := stealAt.Truncate(time.Second).Add(time.Second)
	wall := next.In(time.FixedZone("IST", 5*3600+1800)).Format("2006-01-02 15:04:05")
	local := who(kolkata, wall)
	if local.At != events.FormatTime(next) || local.Zone != "IST" || !strings.HasSuffix(local.AtLocal, "+05:30") ||
		local.Holder == nil || local.Holder.Actor != "oncall" {
		t.Errorf("who --at %q in Asia/Kolkata: at %s (%s %s), holder %+v; want %s, oncall", wall, local.At, local.AtLocal,
			local.Zone, local.Holder, events.FormatTime(next))
	}
	plain := clitest.RunWith(t, root, kolkata, "", "who", "deploy", "--at", wall)
	flat := strings.Join(strings.Fields(plain.Stdout), " ")
	for _, want := range []string{"IST (+05:30)", "began stolen from " + first, "forced_active", `"INC-42: runner gone"`,
		"queued 1. ", "actor bob", "waited "} {
		if !strings.Contains(flat, want) {
			t.Errorf("who --at %q lacks %q:\n%s%s", wall, want, plain.Stdout, plain.Stderr)
		}
	}
	for _, at := range []string{"-15m", next.In(time.FixedZone("IST", 5*3600+1800)).Format("15:04")} {
		if r := clitest.RunWith(t, root, kolkata, "", "who", "deploy", "--at", at); r.Code != 0 {
			t.Errorf("who --at %s: exit %d %s", at, r.Code, r.Stderr)
		}
	}
}
