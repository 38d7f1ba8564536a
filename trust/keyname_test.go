package trust

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/internal/proc"
)

// TestKeyNameTellsHostsApart: two containers with the same user and
// hostname name their keys apart, by the machine key every holding
// records in its boot_id (16 random hex digits where there is no machine
// id), within the rules of a note's key name, however long the hostname.
func TestKeyNameTellsHostsApart(t *testing.T) {
	if m := proc.MachineKey(); m != "" && !strings.HasSuffix(KeyName(), "/"+m) {
		t.Errorf("KeyName() = %q, want it to end with this machine's key /%s", KeyName(), m)
	}
	a, b := keyName("ops", "build", "0123456789abcdef"), keyName("ops", "build", "fedcba9876543210")
	if a == b || a != "ops@build/0123456789abcdef" {
		t.Errorf("two machines named ops@build: keys named %q and %q, want ops@build/MACHINE each", a, b)
	}
	u1, u2 := keyName("ops", "build", ""), keyName("ops", "build", "")
	if u1 == u2 || len(u1) != len("ops@build/")+16 || !strings.HasPrefix(u1, "ops@build/") {
		t.Errorf("two machines with no machine id: keys named %q and %q, want ops@build/ and 16 random hex digits each", u1, u2)
	}
	long := keyName("ops user", strings.Repeat("h", 300), "0123456789abcdef")
	if !strings.HasSuffix(long, "/0123456789abcdef") || len(long) > 200 || !strings.HasPrefix(long, "ops_user@") {
		t.Errorf("a long hostname: key named %q (%d bytes), want at most 200 ending with the machine key", long, len(long))
	}
	for _, n := range []string{a, b, u1, long} {
		if !checkpoint.ValidKeyName(n) {
			t.Errorf("%q is not a valid key name", n)
		}
		if _, _, err := checkpoint.GenerateKey(n); err != nil {
			t.Errorf("GenerateKey(%q): %v", n, err)
		}
	}
}

// TestAnExistingKeyKeepsItsName: a key made before under user@host is
// read as it is, never renamed.
func TestAnExistingKeyKeepsItsName(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "trust"), "/nonexistent-root")
	if err != nil {
		t.Fatal(err)
	}
	skey, vkey, err := checkpoint.GenerateKey("ops@build")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.KeyPath(), []byte(skey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k, created, err := s.Key()
	if err != nil || created || k.Verifier != vkey || k.Signer.Name() != "ops@build" {
		t.Fatalf("reading a key named ops@build: %+v created %v, %v", k, created, err)
	}
}
