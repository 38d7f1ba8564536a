package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// floorBins builds internal/cmd/floor (what `run NAME -- true` cannot
// avoid, on our stack) and internal/cmd/floor/hello (a static Go program
// that only starts), as `make build` builds lockledger, and stages them in
// dir.
func floorBins(tmp, dir string) (floor, hello string) {
	build := filepath.Join(tmp, "build")
	for _, pkg := range []string{"./internal/cmd/floor", "./internal/cmd/floor/hello"} {
		c := exec.Command("go", "build", "-o", filepath.Join(build, filepath.Base(pkg)), pkg)
		c.Env = append(os.Environ(), "CGO_ENABLED=0")
		c.Stderr = os.Stderr
		if err := c.Run(); err != nil {
			die(fmt.Errorf("building %s (run the bench from the repository's top directory): %w", pkg, err))
		}
	}
	return stage(filepath.Join(build, "floor"), dir, "floor"), stage(filepath.Join(build, "hello"), dir, "hello")
}

// stage copies the executable src into dir as name and returns the copy.
// Every program the bench times runs from such a fresh copy on one file
// system: how a file was written and how long it sat in the page cache
// move a start by up to a millisecond here (the linker's own output of
// lockledger started 1 ms slower than a copy of it), which is not the
// code's doing.
func stage(src, dir, name string) string {
	b, err := os.ReadFile(src)
	if err != nil {
		die(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		die(err)
	}
	dst := filepath.Join(dir, name)
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		die(err)
	}
	return dst
}

// floorSetup makes the floor's database from the migrations in dir and
// runs it once to warm it, and returns its arguments for `true`, unsigned
// and signing each head into dir/heads.
func floorSetup(floor, dir string) (plain, signed []string) {
	if err := os.MkdirAll(filepath.Join(dir, "heads"), 0o700); err != nil {
		die(err)
	}
	db, lock := filepath.Join(dir, "floor.db"), filepath.Join(dir, "floor.lock")
	timeCmd(os.Environ(), floor, "-init", "-db", db)
	plain = []string{"-db", db, "-lock", lock, "--", "true"}
	signed = []string{"-db", db, "-lock", lock, "-heads", filepath.Join(dir, "heads"), "--", "true"}
	timeCmd(os.Environ(), floor, plain...)
	timeCmd(os.Environ(), floor, signed...)
	return plain, signed
}
