package ledger

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/internal/lockfile"
)

// TestGroupRootOfAnotherGroupIsNamed: a --group refused at a group root
// of another group names that group by its name, as the user must type it
// to name that group: it said "group 0", a number the user had not typed.
func TestGroupRootOfAnotherGroupIsNamed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: needs root to chgrp a directory to group root (gid 0, named on every Linux)")
	}
	root := filepath.Join(t.TempDir(), "root")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(root, -1, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, os.ModeSetgid|0o770); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), root, WithGroup(54399), Unsigned())
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "is a group root of group "+lockfile.GroupText(0)+" already, not of 54399") ||
		!strings.Contains(lockfile.GroupText(0), "(gid 0)") {
		t.Errorf("--group 54399 at a group root of gid 0: %v; want it to name group %s", err, lockfile.GroupText(0))
	}
}
