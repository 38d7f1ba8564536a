package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// floorBins builds internal/cmd/floor (what `run NAME -- true` cannot
// avoid, on our stack) and internal/cmd/floor/hello (a static Go program
// that only starts) into dir, as `make build` builds lockledger.
func floorBins(dir string) (floor, hello string) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		die(err)
	}
	floor, hello = filepath.Join(dir, "floor"), filepath.Join(dir, "hello")
	for _, b := range []struct{ out, pkg string }{
		{floor, "./internal/cmd/floor"},
		{hello, "./internal/cmd/floor/hello"},
	} {
		c := exec.Command("go", "build", "-o", b.out, b.pkg)
		c.Env = append(os.Environ(), "CGO_ENABLED=0")
		c.Stderr = os.Stderr
		if err := c.Run(); err != nil {
			die(fmt.Errorf("building %s (run the bench from the repository's top directory): %w", b.pkg, err))
		}
	}
	return floor, hello
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
