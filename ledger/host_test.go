package ledger

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAHostIDThatIsNotPlainTextIsRefused: WithHost and LOCKLEDGER_HOST_ID
// follow the actor's rules; Open fails with ErrInvalid and creates nothing.
func TestAHostIDThatIsNotPlainTextIsRefused(t *testing.T) {
	ctx := context.Background()
	for _, id := range []string{"a\nb", "a\x1b[2J", "a\xff", strings.Repeat("h", 300)} {
		root := filepath.Join(t.TempDir(), "r")
		if l, err := Open(ctx, root, WithHost(Host{ID: id}), Unsigned()); !errors.Is(err, ErrInvalid) {
			if l != nil {
				l.Close()
			}
			t.Errorf("WithHost(%q): %v, want ErrInvalid", id, err)
		}
		t.Setenv(HostIDEnv, id)
		if l, err := Open(ctx, root, Unsigned()); !errors.Is(err, ErrInvalid) {
			if l != nil {
				l.Close()
			}
			t.Errorf("%s=%q: %v, want ErrInvalid", HostIDEnv, id, err)
		}
		if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a refused host id %q left %s: %v", id, root, err)
		}
	}
}
