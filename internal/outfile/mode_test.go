package outfile_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/lockledger/lockledger/internal/outfile"
)

// TestWithModeSetsTheNewFilesMode: WithMode's mode (less the umask)
// replaces Mode, for the file and for the target it replaces.
func TestWithModeSetsTheNewFilesMode(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	target := filepath.Join(t.TempDir(), "metrics.prom")
	write(t, target, "old")
	if err := os.Chmod(target, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := outfile.Create(target, outfile.WithMode(0o666))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("new")); err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(target); err != nil || st.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v (%v), want 0644: 0666 less the umask 022", st.Mode().Perm(), err)
	}
}
