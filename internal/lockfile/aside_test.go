package lockfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/lockfile"
)

// A target's unreadable file is kept beside it under its own mode, the
// link reused by a second run, refused when the file changed, and removed
// only by DropAsideFile for that file.
func TestKeepAsideFileBesideATarget(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, ".sprint-running")
	data := []byte("pid: {{{\n")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 25, 11, 30, 0, 0, time.UTC)
	if _, err := lockfile.KeepAsideFile(p, []byte("other bytes"), now); !errors.Is(err, lockfile.ErrChangedMeanwhile) {
		t.Fatalf("KeepAsideFile of bytes no longer there: %v, want ErrChangedMeanwhile", err)
	}
	a, err := lockfile.KeepAsideFile(p, data, now)
	if err != nil || !a.Created || a.Path != p+".corrupt-20261125T113000Z" {
		t.Fatalf("KeepAsideFile = %+v, %v", a, err)
	}
	if got, _ := os.ReadFile(a.Path); string(got) != string(data) {
		t.Fatalf("kept %q", got)
	}
	if fi, _ := os.Stat(a.Path); fi.Mode().Perm() != 0o644 {
		t.Fatalf("kept with mode %v, want the file's own 0644", fi.Mode().Perm())
	}
	again, err := lockfile.KeepAsideFile(p, data, now.Add(time.Hour))
	if err != nil || again.Created || again.Path != a.Path {
		t.Fatalf("a second KeepAsideFile = %+v, %v, want the first link reused", again, err)
	}
	other := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(other, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := lockfile.DropAsideFile(p, other); err == nil {
		t.Fatal("DropAsideFile removed a file that is no link kept aside")
	}
	if err := lockfile.DropAsideFile(p, a.Path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(a.Path); !os.IsNotExist(err) {
		t.Fatalf("the link is still there: %v", err)
	}
	if got, _ := os.ReadFile(p); string(got) != string(data) {
		t.Fatalf("the file itself changed: %q", got)
	}
}
