package ledger

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/lockledger/lockledger/events"
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
	uid, name := osUser()
	if name != "" && validText("actor", name, 256, false) == nil {
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
	if err := validText("actor", id.Actor, 256, false); err != nil {
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

func validText(field, s string, max int, emptyOK bool) error {
	if s == "" && !emptyOK {
		return events.Invalid(field, s, "must not be empty")
	}
	if len(s) > max {
		return events.Invalid(field, s[:32]+"...", fmt.Sprintf("must be at most %d bytes", max))
	}
	if !utf8.ValidString(s) {
		return events.Invalid(field, strings.ToValidUTF8(s, "\uFFFD"), "must be valid UTF-8")
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return events.Invalid(field, s, "must not contain control characters")
		}
	}
	return nil
}
