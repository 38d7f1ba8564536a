package proc

import (
	"os"
	"strings"
	"testing"
	"time"
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

func TestCompareBootTellsARebootFromAnotherMachine(t *testing.T) {
	booted := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	before, after := booted.Add(-time.Minute), booted.Add(time.Minute)
	a, b := "0123456789abcdef", "fedcba9876543210"
	for _, c := range []struct {
		name             string
		recorded, self   string
		lastSeen, booted time.Time
		want             BootVerdict
	}{
		{"this boot", JoinBoot(a, "b1"), JoinBoot(a, "b1"), after, booted, ThisBoot},
		{"unknown boot", "", JoinBoot(a, "b1"), before, booted, ThisBoot},
		{"a reboot", JoinBoot(a, "b0"), JoinBoot(a, "b1"), before, booted, Rebooted},
		{"a reboot, boot time unknown", JoinBoot(a, "b0"), JoinBoot(a, "b1"), after, time.Time{}, Rebooted},
		{"another machine", JoinBoot(b, "b9"), JoinBoot(a, "b1"), before, booted, OtherMachine},
		{"another machine, same boot id", JoinBoot(b, "b1"), JoinBoot(a, "b1"), before, booted, OtherMachine},
		{"a clone seen after this boot began", JoinBoot(a, "b9"), JoinBoot(a, "b1"), after, booted, OtherMachine},
		{"a bare boot id of another boot", "b0", JoinBoot(a, "b1"), before, booted, OtherBoot},
		{"a bare boot id seen after this boot began", "b0", JoinBoot(a, "b1"), after, booted, OtherMachine},
		{"this machine unknown", JoinBoot(a, "b0"), "b1", before, booted, OtherBoot},
	} {
		if got := CompareBoot(c.recorded, c.lastSeen, c.self, c.booted); got != c.want {
			t.Errorf("%s: CompareBoot(%q, %s, %q, %s) = %d, want %d", c.name, c.recorded, c.lastSeen, c.self, c.booted, got, c.want)
		}
	}
}

func TestBootTimeIsThePast(t *testing.T) {
	bt := BootTime()
	if bt.IsZero() {
		t.Skip("no /proc/stat btime here")
	}
	if !bt.Before(time.Now()) || bt != BootTime() {
		t.Fatalf("BootTime() = %s, want one instant before now", bt)
	}
}
