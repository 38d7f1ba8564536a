package proc

import (
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// BootID is this boot's id (sysctl kern.bootsessionuuid, lowercased as
// Linux's boot_id is), "" where unknown. A process recorded under another
// boot id is gone.
func BootID() string {
	s, err := unix.Sysctl("kern.bootsessionuuid")
	if err != nil {
		return ""
	}
	return strings.ToLower(strings.TrimSpace(s))
}

// BootTime is when this boot began (sysctl kern.boottime, to the second,
// rounded down as Linux's btime is); the zero time where unknown.
func BootTime() time.Time {
	tv, err := unix.SysctlTimeval("kern.boottime")
	if err != nil || tv.Sec <= 0 {
		return time.Time{}
	}
	return time.Unix(int64(tv.Sec), 0)
}
