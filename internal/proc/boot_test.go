package proc

import (
	"os"
	"testing"
)

func TestBootID(t *testing.T) {
	if _, err := os.Stat("/proc/sys/kernel/random/boot_id"); err != nil {
		t.Skip("no boot id here")
	}
	id := BootID()
	if len(id) != 36 || id != BootID() {
		t.Fatalf("BootID() = %q, want one uuid, the same each time", id)
	}
}
