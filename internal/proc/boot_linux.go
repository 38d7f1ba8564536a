package proc

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
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
	b, _ := os.ReadFile("/proc/stat")
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "btime "); ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && n > 0 {
				return time.Unix(n, 0)
			}
		}
	}
	return time.Time{}
}
