package outfile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/internal/outfile"
)

func names(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ns []string
	for _, e := range entries {
		ns = append(ns, e.Name())
	}
	return strings.Join(ns, " ")
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestNothingIsVisibleAtTheTargetBeforeCommit(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "out")
	write(t, target, "old")
	f, err := outfile.Create(target)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("new")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "old" {
		t.Fatalf("before Commit the target holds %q", b)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "new" {
		t.Fatalf("after Commit the target holds %q", b)
	}
	if st, _ := os.Stat(target); st.Mode().Perm() != outfile.Mode {
		t.Errorf("mode %v, want %v", st.Mode().Perm(), os.FileMode(outfile.Mode))
	}
	if n := names(t, dir); n != "out" {
		t.Errorf("the directory holds [%s]", n)
	}
	f.Abort() // after Commit: nothing
	if b, _ := os.ReadFile(target); string(b) != "new" {
		t.Fatalf("Abort after Commit changed the target: %q", b)
	}
}

func TestAbortLeavesTheTargetAsItWas(t *testing.T) {
	dir := t.TempDir()
	for _, existing := range []bool{false, true} {
		target := filepath.Join(dir, "out")
		if existing {
			write(t, target, "old")
		}
		f, err := outfile.Create(target)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = f.Write([]byte("new"))
		f.Abort()
		want := ""
		if existing {
			want = "out"
		}
		if n := names(t, dir); n != want {
			t.Errorf("existing %v: after Abort the directory holds [%s], want [%s]", existing, n, want)
		}
		if err := f.Commit(); err == nil {
			t.Error("Commit after Abort succeeded")
		}
	}
}

// The target is checked again at Commit: a symlink planted while the
// output was written is refused, not replaced, and not followed.
func TestCommitRefusesATargetThatBecameASymlink(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	victim := filepath.Join(elsewhere, "victim")
	write(t, victim, "precious")
	target := filepath.Join(dir, "out")
	f, err := outfile.Create(target)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.Write([]byte("new"))
	if err := os.Symlink(victim, target); err != nil {
		t.Fatal(err)
	}
	err = f.Commit()
	var refused *outfile.RefusedError
	if !errors.As(err, &refused) || !errors.Is(err, outfile.ErrRefused) || !strings.Contains(refused.Rule, "symlink") {
		t.Fatalf("Commit over a new symlink: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Fatalf("the symlink's target holds %q", b)
	}
	if n := names(t, dir); n != "out" {
		t.Errorf("the directory holds [%s]", n)
	}
}

func TestNoReplaceNeverTouchesAnExistingFile(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "key")
	write(t, target, "old")
	if _, err := outfile.Create(target, outfile.NoReplace()); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Create over an existing file: %v", err)
	}
	// Created between Create and Commit.
	os.Remove(target)
	f, err := outfile.Create(target, outfile.NoReplace())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.Write([]byte("new"))
	write(t, target, "theirs")
	if err := f.Commit(); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Commit over a file made meanwhile: %v", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "theirs" {
		t.Fatalf("the file made meanwhile holds %q", b)
	}
	if n := names(t, dir); n != "key" {
		t.Errorf("the directory holds [%s]", n)
	}
}

func TestOutsideOfRefusesTheGuardedTreeUnderAnyName(t *testing.T) {
	guarded, dir := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(guarded, "a", "b"), 0o700); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(guarded, "a", "db"), "data")
	if err := os.Symlink(filepath.Join(guarded, "a"), filepath.Join(dir, "alias")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(guarded, "a", "db"), filepath.Join(dir, "db-link")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		filepath.Join(guarded, "new"),
		filepath.Join(guarded, "a", "b", "new"),
		filepath.Join(dir, "alias", "db"),
		filepath.Join(dir, "alias", "b", "new"),
		filepath.Join(dir, "db-link"),
	} {
		_, err := outfile.Create(p, outfile.OutsideOf(filepath.Join(t.TempDir(), "absent"), guarded))
		var refused *outfile.RefusedError
		if !errors.As(err, &refused) || refused.Inside != guarded || refused.Path != p {
			t.Errorf("%s: %v, want refused as inside %s", p, err, guarded)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(guarded, "a", "db")); string(b) != "data" {
		t.Fatalf("the guarded file holds %q", b)
	}
	f, err := outfile.Create(filepath.Join(dir, "fine"), outfile.OutsideOf(guarded))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
}

func TestAPathThatNamesNoFileIsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"", dir + "/", filepath.Join(dir, "."), filepath.Join(dir, ".."), dir} {
		if _, err := outfile.Create(p); !errors.Is(err, outfile.ErrRefused) {
			t.Errorf("%q: %v, want refused", p, err)
		}
	}
}
