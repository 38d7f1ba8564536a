package proc

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"time"
)

// MachineID is this machine's id (/etc/machine-id, else
// /var/lib/dbus/machine-id: 32 lowercase hex digits), "" where unknown or
// malformed. It stays the same across reboots, which change BootID.
func MachineID() string {
	for _, p := range []string{"/etc/machine-id", "/var/lib/dbus/machine-id"} {
		b, _ := os.ReadFile(p)
		if id := strings.TrimSpace(string(b)); isMachineID(id) {
			return id
		}
	}
	return ""
}

func isMachineID(s string) bool {
	return len(s) == 32 && strings.Trim(s, "0123456789abcdef") == ""
}

// MachineKey is what lockledger records of MachineID, which machine-id(5)
// asks never to expose: the first 64 bits of HMAC-SHA256 of lockledger's
// application id keyed with it, 16 hex digits; "" where the id is unknown.
func MachineKey() string { return machineKey(MachineID()) }

func machineKey(id string) string {
	if id == "" {
		return ""
	}
	m := hmac.New(sha256.New, []byte(id))
	m.Write([]byte("lockledger host identity"))
	return hex.EncodeToString(m.Sum(nil)[:8])
}

// Boot names this boot of this machine as a holder records it (the
// acquired event's boot_id): JoinBoot(MachineKey(), BootID()).
func Boot() string { return JoinBoot(MachineKey(), BootID()) }

// JoinBoot is the recorded form of a boot of a machine: MACHINE/BOOT (53
// bytes for a key and a boot uuid), or the boot id alone where the machine
// is unknown, as in every boot_id recorded before machines were.
func JoinBoot(machine, boot string) string {
	if machine == "" {
		return boot
	}
	return machine + "/" + boot
}

// SplitBoot is JoinBoot's inverse: machine is "" for a bare boot id.
func SplitBoot(s string) (machine, boot string) {
	if m, b, ok := strings.Cut(s, "/"); ok {
		return m, b
	}
	return "", s
}

// BootVerdict is what a holder's recorded boot says of it, from this boot.
type BootVerdict int

const (
	// ThisBoot: the holder ran in this boot, or its boot is unknown; its
	// pid says whether it lives.
	ThisBoot BootVerdict = iota
	// Rebooted: the holder ran in an earlier boot of this machine: gone.
	Rebooted
	// OtherMachine: the holder runs on another machine that records the
	// same host id: only its TTL ends it.
	OtherMachine
	// OtherBoot: the holder ran in another boot of a machine that is not
	// known (a boot id recorded without one, or this machine's unknown).
	OtherBoot
)

// CompareBoot judges a holder's recorded boot (JoinBoot's form) against
// this one, self, which began at booted (zero: unknown). A holder last
// seen after this boot began cannot be of an earlier boot of this
// machine: it is another machine with the same machine id (a clone).
func CompareBoot(recorded string, lastSeen time.Time, self string, booted time.Time) BootVerdict {
	hm, hb := SplitBoot(recorded)
	sm, sb := SplitBoot(self)
	switch {
	case hm != "" && sm != "" && hm != sm:
		return OtherMachine
	case hb == "" || sb == "" || hb == sb:
		return ThisBoot
	case !booted.IsZero() && !lastSeen.Before(booted):
		return OtherMachine
	case hm == "" || sm == "":
		return OtherBoot
	}
	return Rebooted
}
