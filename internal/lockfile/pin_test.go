package lockfile_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/internal/lockfile"
)

func TestPinRoundTripsAndRefusesGarbage(t *testing.T) {
	d, root := openRoot(t)
	if _, ok, err := d.ReadPin(); ok || err != nil {
		t.Fatalf("a root without a pin: ok %v, err %v", ok, err)
	}
	for _, want := range []lockfile.Pin{{LedgerID: "ab12", Seq: 0}, {LedgerID: "ab12", Seq: 13, Hash: strings.Repeat("cd", 32)}} {
		if err := d.WritePin(want); err != nil {
			t.Fatal(err)
		}
		got, ok, err := d.ReadPin()
		if err != nil || !ok || got != want {
			t.Fatalf("ReadPin after WritePin(%+v): %+v, %v, %v", want, got, ok, err)
		}
	}
	path := filepath.Join(root, lockfile.PinName)
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the pin file: %v, %v; want mode 0600", fi, err)
	}
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "."+lockfile.PinName) {
			t.Errorf("a temporary pin file was left: %s", e.Name())
		}
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := d.ReadPin(); ok || err != nil {
		t.Fatalf("an empty pin: ok %v, err %v; want none", ok, err)
	}
	for _, bad := range []string{"ab12\n", "ab12 x -\n", "ab12 5 -\n", "ab12 0 cd\n", "ab12 -1 -\n"} {
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := d.ReadPin(); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("pin %q: got %v, want an error naming the file", bad, err)
		}
	}
}
