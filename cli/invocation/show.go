package invocation

import (
	"fmt"
	"time"
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

// ShortDuration is d in whole seconds, never below 0s.
func ShortDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	return d.Truncate(time.Second).String()
}
