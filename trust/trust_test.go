package trust

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/events"
)

func TestOpenRefusesAStoreAnyoneWhoCanWriteTheRootCouldRewrite(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	real, link, open := filepath.Join(dir, "real"), filepath.Join(dir, "link"), filepath.Join(dir, "open")
	for _, d := range []string{root, real, open} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	for path, rule := range map[string]string{
		filepath.Join(root, "trust"): "inside the root",
		filepath.Join(link):          "is a symlink",
		open:                         "others can write it",
	} {
		_, err := Open(path, root)
		if !errors.Is(err, events.ErrInvalid) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), rule) {
			t.Errorf("Open(%s): %v, want invalid naming it and %q", path, err, rule)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "trust")); !os.IsNotExist(err) {
		t.Errorf("a refused store inside the root was created: %v", err)
	}
	s, err := Open(filepath.Join(dir, "a", "b"), root)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(s.Path()); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("store %v, %v; want a 0700 directory", fi, err)
	}
}

// A root not made yet, named through a symlinked directory, with missing
// directories below the link: a trust store given by its real path inside
// where that root will be is refused all the same.
func TestOpenRefusesAStoreInsideARootNotMadeYet(t *testing.T) {
	dir := t.TempDir()
	real, link := filepath.Join(dir, "real"), filepath.Join(dir, "link")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(link, "a", "b", "root")
	for _, store := range []string{
		filepath.Join(real, "a", "b", "root", "trust"),
		filepath.Join(real, "a", "b", "root"),
		filepath.Join(link, "a", "b", "root", "x", "trust"),
	} {
		if _, err := Open(store, root); !errors.Is(err, events.ErrInvalid) || !strings.Contains(err.Error(), "inside the root") {
			t.Errorf("Open(%s) for the root %s: %v, want it refused as inside the root", store, root, err)
		}
	}
	if _, err := Open(filepath.Join(real, "a", "trust"), root); err != nil {
		t.Errorf("a store beside the root's directories: %v", err)
	}
}

func TestKeyIsMadeOnceAndNeverReplaced(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "trust"), "/nonexistent-root")
	if err != nil {
		t.Fatal(err)
	}
	k, created, err := s.Key()
	if err != nil || !created {
		t.Fatalf("first Key: created %v, %v", created, err)
	}
	again, created, err := s.Key()
	if err != nil || created || again.Verifier != k.Verifier {
		t.Fatalf("second Key: created %v, same %v, %v", created, again.Verifier == k.Verifier, err)
	}
	if fi, err := os.Stat(s.KeyPath()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v, %v; want 0600", fi, err)
	}
	if _, err := checkpoint.NewVerifier(k.Verifier); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(s.KeyPath(), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Key(); !errors.Is(err, events.ErrInvalid) {
		t.Fatalf("a key others can read: %v, want refused", err)
	}
}

func TestPinsRoundTripAndForget(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "trust"), "/nonexistent-root")
	if err != nil {
		t.Fatal(err)
	}
	_, vkey, err := checkpoint.GenerateKey("ops")
	if err != nil {
		t.Fatal(err)
	}
	odd := "/tmp/a root\nwith %25 and \x1b[31m"
	for _, p := range []Pin{{Root: odd, LedgerID: "abc", Verifier: vkey}, {Root: "/srv/x", LedgerID: "def", Verifier: vkey}} {
		if added, err := s.Add(p); !added || err != nil {
			t.Fatalf("Add %+v: %v, %v", p, added, err)
		}
	}
	if added, err := s.Add(Pin{Root: "/srv/x", LedgerID: "def", Verifier: vkey}); added || err != nil {
		t.Fatalf("adding a pin twice: %v, %v", added, err)
	}
	b, _ := os.ReadFile(s.PinsPath())
	if strings.Count(string(b), "\n") != 2 || strings.ContainsAny(string(b), "\x1b") {
		t.Fatalf("known_ledgers:\n%q", b)
	}
	got, err := s.PinsOf(odd)
	if err != nil || len(got) != 1 || got[0].LedgerID != "abc" {
		t.Fatalf("PinsOf(odd): %+v, %v", got, err)
	}
	gone, err := s.Forget("/srv/x", func(Pin) bool { return true })
	if err != nil || len(gone) != 1 {
		t.Fatalf("Forget: %+v, %v", gone, err)
	}
	if all, _ := s.Pins(); len(all) != 1 || all[0].Root != odd {
		t.Fatalf("after Forget: %+v", all)
	}
	for _, root := range []string{"/a%zz", "/a%2"} {
		if p, err := ParsePin(root + " abc " + vkey); err == nil {
			t.Fatalf("a root with a %% not followed by two hex digits: %+v", p)
		}
	}
	if _, err := s.Add(Pin{Root: "/srv/y", LedgerID: "a b", Verifier: vkey}); !errors.Is(err, events.ErrInvalid) {
		t.Fatalf("a ledger id with a space: %v", err)
	}
}

// The heads kept in the store are what a rolled-back ledger is caught
// against: a heads directory that is a symlink (to a shared directory),
// another user's or writable by others is refused as the store itself is,
// even inside a store others may enter (0755).
func TestOpenRefusesAHeadsDirectoryOthersCouldWrite(t *testing.T) {
	shared := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(shared, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(heads string) error{
		"is a symlink":        func(heads string) error { return os.Symlink(shared, heads) },
		"others can write it": func(heads string) error { return errors.Join(os.Mkdir(heads, 0o700), os.Chmod(heads, 0o777)) },
	}
	if os.Geteuid() == 0 {
		cases["is owned by uid 65534"] = func(heads string) error { return errors.Join(os.Mkdir(heads, 0o700), os.Chown(heads, 65534, -1)) }
	}
	for rule, plant := range cases {
		dir := filepath.Join(t.TempDir(), "trust")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		heads := filepath.Join(dir, "heads")
		if err := plant(heads); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir, "/nonexistent-root")
		if !errors.Is(err, events.ErrInvalid) || !strings.Contains(err.Error(), heads) || !strings.Contains(err.Error(), rule) {
			t.Errorf("%s: Open: %v, want invalid naming %s and %q", rule, err, heads, rule)
		}
	}
}

// Every file of the store is a regular file of this user's that no one
// else can write, never followed through a symlink: known_ledgers as a
// symlink, a FIFO or writable by others is refused (events.Invalid naming
// it), by the readers and the writer of pins alike.
func TestPinsFileMustBeARegularFileOfTheUsers(t *testing.T) {
	for name, plant := range map[string]func(t *testing.T, path string){
		"is a symlink": func(t *testing.T, path string) {
			other := filepath.Join(t.TempDir(), "elsewhere")
			if err := os.WriteFile(other, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(other, path); err != nil {
				t.Fatal(err)
			}
		},
		"not a regular file": func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"others can write it": func(t *testing.T, path string) {
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, 0o666); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(filepath.Join(dir, "trust"), filepath.Join(dir, "root"))
			if err != nil {
				t.Fatal(err)
			}
			plant(t, s.PinsPath())
			_, rerr := s.Pins()
			_, aerr := s.Add(Pin{Root: "/r", LedgerID: "abc", Verifier: verifierKey(t)})
			for _, err := range []error{rerr, aerr} {
				if !errors.Is(err, events.ErrInvalid) || !strings.Contains(err.Error(), s.PinsPath()) || !strings.Contains(err.Error(), name) {
					t.Errorf("%v, want invalid naming %s and %q", err, s.PinsPath(), name)
				}
			}
		})
	}
}

func verifierKey(t *testing.T) string {
	t.Helper()
	_, vk, err := checkpoint.GenerateKey("t")
	if err != nil {
		t.Fatal(err)
	}
	return vk
}
