package ledger

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/proc"
)

// Identity says who acts: the request, the actor and the process.
type Identity struct {
	RequestID string // "" generates req_<ULID>
	Actor     string // "" uses DefaultActor()
	PID       int    // 0 uses this process
}

// DefaultActor is LOCKLEDGER_ACTOR, else USER, else the name of the OS
// user running this process (a container often sets no USER), else its
// uid.
func DefaultActor() string {
	for _, k := range []string{"LOCKLEDGER_ACTOR", "USER"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	uid, name := proc.Self()
	if name != "" && events.ValidText("actor", name, 256, false) == nil {
		return name
	}
	return strconv.Itoa(uid)
}

func (l *Ledger) resolve(id Identity, now time.Time) (Identity, error) {
	if id.RequestID == "" {
		id.RequestID = events.NewRequestID(now)
	}
	if err := events.ValidateRequestID(id.RequestID); err != nil {
		return id, err
	}
	if id.Actor == "" {
		id.Actor = DefaultActor()
	}
	if err := events.ValidText("actor", id.Actor, 256, false); err != nil {
		return id, err
	}
	if id.PID == 0 {
		id.PID = os.Getpid()
	}
	if id.PID < 0 {
		return id, events.Invalid("pid", fmt.Sprint(id.PID), "must be a positive process id")
	}
	return id, nil
}
