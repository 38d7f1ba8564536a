package trust

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/events"
)

// A verify starts from the head kept under verified/ and trusts every
// event up to it, so that directory is held to the rule of the store's
// others (ownDir): one that is a symlink to a directory someone else
// controls, another user's, or writable by others is refused, although
// the head file in it is this user's own 0600 file, which another user
// could have moved in there (from another root's record) or kept there.
func TestVerifiedReadRefusesADirectoryOthersCouldPlantIn(t *testing.T) {
	const id = "3db16c657eb991eadb3edc301440d379"
	head := []byte(`{"ledger_id":"` + id + `","seq":2}`)
	// plantIn writes a head file of this user's (0600) into dir.
	plantIn := func(t *testing.T, dir string, name string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), head, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cases := map[string]func(t *testing.T, verified, name string){
		"is a symlink": func(t *testing.T, verified, name string) {
			elsewhere := filepath.Join(t.TempDir(), "shared")
			if err := errors.Join(os.Mkdir(elsewhere, 0o700), os.Chmod(elsewhere, 0o777)); err != nil {
				t.Fatal(err)
			}
			plantIn(t, elsewhere, name)
			if err := os.Symlink(elsewhere, verified); err != nil {
				t.Fatal(err)
			}
		},
		"others can write it": func(t *testing.T, verified, name string) {
			if err := errors.Join(os.Mkdir(verified, 0o700), os.Chmod(verified, 0o777)); err != nil {
				t.Fatal(err)
			}
			plantIn(t, verified, name)
		},
		"is owned by uid 65534": func(t *testing.T, verified, name string) {
			if os.Geteuid() != 0 {
				t.Skip("SKIP: giving the directory to another uid (65534) needs root; the other rules are checked without it")
			}
			if err := os.Mkdir(verified, 0o700); err != nil {
				t.Fatal(err)
			}
			plantIn(t, verified, name)
			if err := os.Chown(verified, 65534, -1); err != nil {
				t.Fatal(err)
			}
		},
	}
	for rule, plant := range cases {
		t.Run(rule, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(filepath.Join(dir, "trust"), filepath.Join(dir, "root"))
			if err != nil {
				t.Fatal(err)
			}
			v := Verified{Dir: s.VerifiedDir(), Root: "/r"}
			plant(t, v.Dir, filepath.Base(v.Path(id)))
			b, err := v.Read(id)
			if !errors.Is(err, events.ErrInvalid) || !strings.Contains(err.Error(), v.Dir) || !strings.Contains(err.Error(), rule) {
				t.Errorf("Read: %q, %v; want invalid naming %s and %q", b, err, v.Dir, rule)
			}
		})
	}
	t.Run("this user's own", func(t *testing.T) {
		dir := t.TempDir()
		s, err := Open(filepath.Join(dir, "trust"), filepath.Join(dir, "root"))
		if err != nil {
			t.Fatal(err)
		}
		v := Verified{Dir: s.VerifiedDir(), Root: "/r"}
		if b, err := v.Read(id); b != nil || err != nil {
			t.Fatalf("Read with no verified directory: %q, %v; want nothing", b, err)
		}
		if err := v.Store(id, head); err != nil {
			t.Fatal(err)
		}
		if b, err := v.Read(id); !bytes.Equal(b, head) || err != nil {
			t.Fatalf("Read: %q, %v; want %q", b, err, head)
		}
	})
}
