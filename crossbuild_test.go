package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestBuildsForMacOS cross-compiles the binary for darwin/arm64 as make
// release does, and vets for darwin every package with a file of its own
// for macOS, its tests included, so that the macOS build cannot rot on a
// Linux host. Its binaries cannot be run here: the macOS code is checked
// by compiling and by reading (docs/macos.md). It compiles everything a
// second time, for minutes on a busy machine, so make test leaves it to
// make crossbuild (LOCKLEDGER_CROSSBUILD=1), which .ci/run runs after it.
func TestBuildsForMacOS(t *testing.T) {
	if os.Getenv("LOCKLEDGER_CROSSBUILD") == "" {
		t.Skip("the darwin/arm64 cross-build is checked by make crossbuild (LOCKLEDGER_CROSSBUILD=1), not here")
	}
	needBinaries(t, "go")
	var pkgs []string
	for _, pattern := range []string{"*/*_darwin.go", "*/*/*_darwin.go", "*/*/*/*_darwin.go"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			pkgs = append(pkgs, "./"+filepath.Dir(f))
		}
	}
	slices.Sort(pkgs)
	pkgs = slices.Compact(pkgs)
	for _, want := range []string{"./internal/proc", "./internal/lockfile"} {
		if !slices.Contains(pkgs, want) {
			t.Fatalf("no macOS files found in %s (found %v)", want, pkgs)
		}
	}
	env := append(os.Environ(), "GOOS=darwin", "GOARCH=arm64", "CGO_ENABLED=0")
	for _, args := range [][]string{{"build", "-o", os.DevNull, "."}, append([]string{"vet"}, pkgs...)} {
		c := exec.Command("go", args...)
		c.Env = env
		if out, err := c.CombinedOutput(); err != nil {
			t.Errorf("GOOS=darwin GOARCH=arm64 go %v: %v\n%s", args, err, out)
		}
	}
}
