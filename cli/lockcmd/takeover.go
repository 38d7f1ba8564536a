package lockcmd

import (
	"fmt"
	"time"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/lease"
)

// takeOverGrace is how long acquire and steal let a stale holder's job act
// on TERM (see lease.StopTakenOver): they send no heartbeat meanwhile, so
// the grace leaves most of the new holder's TTL.
func takeOverGrace(ttl time.Duration) time.Duration { return min(DefaultKillGrace, ttl/4) }

// reportTakenOver says what became of the job of the stale holder taken
// over by force.
func reportTakenOver(g *invocation.Globals, lock string, t lease.TakenOver) {
	switch {
	case t.NotStopped != "":
		// Its job may still be at work beside the new holder's: the user
		// must see it, --quiet or not.
		g.Log.Error("the stale holder taken over is left running", "lock", lock, "previous", t.RequestID, "why", t.NotStopped)
	case len(t.PIDs) > 0:
		g.Log.Warn("the stale holder's job was stopped before the lock was used", "lock", lock, "previous", t.RequestID,
			"pids", fmt.Sprint(t.PIDs), "action", t.Action)
	}
}
