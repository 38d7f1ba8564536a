package proc

import (
	"os"
	"strings"
)

// BootID is this boot's id (/proc/sys/kernel/random/boot_id), "" where
// unknown. A process recorded under another boot id is gone.
func BootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}
