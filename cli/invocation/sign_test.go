package invocation

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockledger/lockledger/events"
)

// A root not made yet, named through a symlinked directory, is the
// directory the ledger will make there: a --witness in it is refused
// whether it is named through the symlink or through the real path.
func TestWitnessInsideARootNotMadeYetIsRefused(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(link, "root")
	for _, w := range []string{filepath.Join(root, "checkpoints"), filepath.Join(real, "root"), filepath.Join(real, "root", "checkpoints"),
		filepath.Join(real, "root", "a", "b")} {
		if err := WitnessOutsideRoot(root, w); !errors.Is(err, events.ErrInvalid) {
			t.Errorf("--witness %s with root %s: %v, want it refused as inside the root", w, root, err)
		}
	}
	for _, w := range []string{filepath.Join(real, "elsewhere"), filepath.Join(link, "rooted")} {
		if err := WitnessOutsideRoot(root, w); err != nil {
			t.Errorf("--witness %s beside the root: %v", w, err)
		}
	}
}
