package invocation

import (
	"fmt"
	"io"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/termtext"
)

// ProcessText is a holder's process as who and status show it (not
// escaped: an argument of termtext's printers): pid 0 is a lock no process
// holds (--holder none).
func ProcessText(pid int, host string) string {
	if pid == 0 {
		return fmt.Sprintf("none: held while heartbeats arrive within the ttl (acquired on %s)", host)
	}
	return fmt.Sprintf("pid %d on %s", pid, host)
}

// HolderRows writes a holder's request, actor, intent and process as
// status and who show them: one tab-separated row each, for a tabwriter.
func HolderRows(w io.Writer, h *events.Record) {
	termtext.Fprintf(w, "  request\t%s\n", h.RequestID)
	termtext.Fprintf(w, "  actor\t%s\n", h.Actor)
	if h.Intent != "" {
		termtext.Fprintf(w, "  intent\t%s %s\n", h.Intent, h.IntentVersion)
	}
	termtext.Fprintf(w, "  process\t%s\n", ProcessText(h.PID, h.HostID))
}

// ShortDuration is d in whole seconds, never below 0s.
func ShortDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	return d.Truncate(time.Second).String()
}

// Waiter is one waiter in a lock's queue as status, list and who write it
// in JSON, next first.
type Waiter struct {
	Position  int    `json:"position"`
	RequestID string `json:"request_id"`
	Actor     string `json:"actor"`
	PID       int    `json:"pid"`
	HostID    string `json:"host_id"`
	Since     string `json:"since"`
	Until     string `json:"until"`
	Seq       int64  `json:"seq"`
}

// WaiterOf is the waiter at position that joined at since (seq) and
// keeps its place until until.
func WaiterOf(position int, requestID, actor string, pid int, host string, since, until time.Time, seq int64) Waiter {
	return Waiter{position, requestID, actor, pid, host, events.FormatTime(since), events.FormatTime(until), seq}
}
