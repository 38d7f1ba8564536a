package proc

import (
	"os"
	"strings"
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

func TestMachineIDIsStableAndWellFormed(t *testing.T) {
	id := MachineID()
	if id == "" {
		t.Skip("no machine id here")
	}
	if !isMachineID(id) || id != MachineID() {
		t.Fatalf("MachineID() = %q, want 32 hex digits, the same each time", id)
	}
	key := MachineKey()
	if len(key) != 16 || strings.Contains(id, key) || key != machineKey(id) {
		t.Fatalf("MachineKey() = %q for machine id %q, want 16 hex digits that are not part of the id", key, id)
	}
	if m, b := SplitBoot(Boot()); m != key || b != BootID() || len(Boot()) > 64 {
		t.Fatalf("SplitBoot(Boot()) = %q, %q; want %q, %q (at most 64 bytes, boot_id's schema)", m, b, key, BootID())
	}
}

func TestSplitBootReadsBothForms(t *testing.T) {
	for _, c := range []struct{ in, machine, boot string }{
		{"0123456789abcdef/b1", "0123456789abcdef", "b1"},
		{"8f1e2d3c-0000-4000-8000-000000000001", "", "8f1e2d3c-0000-4000-8000-000000000001"},
		{"", "", ""},
	} {
		if m, b := SplitBoot(c.in); m != c.machine || b != c.boot {
			t.Errorf("SplitBoot(%q) = %q, %q; want %q, %q", c.in, m, b, c.machine, c.boot)
		}
		if c.in != "" && JoinBoot(c.machine, c.boot) != c.in {
			t.Errorf("JoinBoot(%q, %q) = %q, want %q", c.machine, c.boot, JoinBoot(c.machine, c.boot), c.in)
		}
	}
}
