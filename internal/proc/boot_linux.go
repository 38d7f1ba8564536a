package proc

import (
	"math"
	"os"
	"strings"
	"time"
)

// BootID is this boot's id (/proc/sys/kernel/random/boot_id), "" where
// unknown. A process recorded under another boot id is gone.
func BootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

// BootTime is when this boot began (/proc/stat btime, to the second); the
// zero time where unknown.
func BootTime() time.Time {
	if n, ok := procStat("btime"); ok && n > 0 && n <= math.MaxInt64 {
		return time.Unix(int64(n), 0)
	}
	return time.Time{}
}
