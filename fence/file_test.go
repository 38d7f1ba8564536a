package fence_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/fence"
)

func write(t *testing.T, path string, token int64, data string) error {
	t.Helper()
	return fence.WriteFile(context.Background(), path, token, strings.NewReader(data))
}

func content(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func token(t *testing.T, path string) int64 {
	t.Helper()
	tok, err := fence.FileToken(path)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// noStrays fails when dir holds anything but want (a temp file left).
func noStrays(t *testing.T, dir string, want ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("directory holds %q, want %q", got, want)
	}
}

// A lower token is refused, typed, and the file and its token stay as
// they were; an equal token (the same holding writing again) and a higher
// one land.
func TestWriteFileRefusesALowerTokenAndKeepsTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	if err := write(t, path, 7, "seven"); err != nil {
		t.Fatal(err)
	}
	if got := content(t, path); got != "seven" || token(t, path) != 7 {
		t.Fatalf("after token 7: %q, token %d", got, token(t, path))
	}
	err := write(t, path, 6, "six")
	var stale *fence.StaleError
	if !errors.Is(err, fence.ErrStale) || !errors.As(err, &stale) {
		t.Fatalf("token 6 after 7: %v, want a *StaleError", err)
	}
	if stale.Token != 6 || stale.Current != 7 || stale.Resource != path || stale.Fence != events.FenceFileWrite {
		t.Fatalf("refusal %+v", stale)
	}
	if got := content(t, path); got != "seven" || token(t, path) != 7 {
		t.Fatalf("after the refusal: %q, token %d, want seven and 7", got, token(t, path))
	}
	if err := write(t, path, 7, "seven again"); err != nil {
		t.Fatalf("equal token: %v", err)
	}
	if err := write(t, path, 9, "nine"); err != nil {
		t.Fatalf("higher token: %v", err)
	}
	if got := content(t, path); got != "nine" || token(t, path) != 9 {
		t.Fatalf("after token 9: %q, token %d", got, token(t, path))
	}
	if err := write(t, path, 8, "eight"); !errors.Is(err, fence.ErrStale) || content(t, path) != "nine" {
		t.Fatalf("token 8 after 9: %v, content %q", err, content(t, path))
	}
	noStrays(t, dir, "config.json", "config.json.fence")
}

// A file the fence replaces keeps its permission bits; a new one is
// created 0666 less the umask.
func TestWriteFileKeepsTheFilesMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := write(t, path, 1, "new"); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v (%v), want 0640", st.Mode().Perm(), err)
	}
}

// What is not a regular file at the path is refused, not followed and
// not waited on: a symlink (its target untouched), a directory, a FIFO
// with no writer. Nothing is left behind, and no token is kept.
func TestWriteFileRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{link, fifo, sub} {
		done := make(chan error, 1)
		go func() { done <- write(t, path, 5, "clobbered") }()
		select {
		case err := <-done:
			if !errors.Is(err, fence.ErrNotRegular) {
				t.Errorf("%s: %v, want ErrNotRegular", filepath.Base(path), err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%s: the write hangs", filepath.Base(path))
		}
	}
	if got := content(t, target); got != "precious" {
		t.Fatalf("the symlink's target now holds %q", got)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the symlink: %v %v", st, err)
	}
	// Refused before the sidecar was made: no token for any of them.
	noStrays(t, dir, "fifo", "link", "sub", "target")
}

// A sidecar that is a symlink, a FIFO or a directory is refused (the
// FIFO without waiting for a writer), and so is one that holds no token.
func TestWriteFileRefusesABadSidecar(t *testing.T) {
	dir := t.TempDir()
	elsewhere := filepath.Join(dir, "elsewhere")
	if err := os.WriteFile(elsewhere, []byte("1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(side string) error{
		"symlink":   func(side string) error { return os.Symlink(elsewhere, side) },
		"fifo":      func(side string) error { return unix.Mkfifo(side, 0o600) },
		"directory": func(side string) error { return os.Mkdir(side, 0o700) },
	}
	for name, place := range cases {
		path := filepath.Join(dir, name)
		if err := place(fence.SidecarOf(path)); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- write(t, path, 5, "data") }()
		select {
		case err := <-done:
			if !errors.Is(err, fence.ErrNotRegular) {
				t.Errorf("%s sidecar: %v, want ErrNotRegular", name, err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%s sidecar: the write hangs", name)
		}
		if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s sidecar: the file was written (%v)", name, err)
		}
		// Reading the token (O_RDONLY, which would wait for a FIFO's writer)
		// is refused too, at once.
		go func() { _, err := fence.FileToken(path); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, fence.ErrNotRegular) {
				t.Errorf("%s sidecar: FileToken: %v, want ErrNotRegular", name, err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%s sidecar: FileToken hangs", name)
		}
	}
	if got := content(t, elsewhere); got != "1\n" {
		t.Fatalf("the symlinked sidecar's target now holds %q", got)
	}
	garbled := filepath.Join(dir, "garbled")
	if err := os.WriteFile(fence.SidecarOf(garbled), []byte("seven\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := write(t, garbled, 5, "data"); err == nil || errors.Is(err, fence.ErrStale) {
		t.Fatalf("a sidecar holding no token: %v, want an error", err)
	}
}

// Writers racing with different tokens: whatever order they run in, the
// file ends with the highest token's content (never a lower token's after
// it), its token kept, and every refused writer's token was below one
// already kept.
func TestWriteFileConcurrentWritersNeverRegress(t *testing.T) {
	for round := range 5 {
		path := filepath.Join(t.TempDir(), "shared")
		const writers = 16
		var wg sync.WaitGroup
		errs := make([]error, writers+1)
		start := make(chan struct{})
		for tok := 1; tok <= writers; tok++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[tok] = fence.WriteFile(context.Background(), path, int64(tok),
					strings.NewReader(strings.Repeat("token "+strconv.Itoa(tok)+"\n", 1000)))
			}()
		}
		close(start)
		wg.Wait()
		if errs[writers] != nil {
			t.Fatalf("round %d: the highest token was refused: %v", round, errs[writers])
		}
		for tok := 1; tok < writers; tok++ {
			if errs[tok] != nil && !errors.Is(errs[tok], fence.ErrStale) {
				t.Fatalf("round %d: token %d: %v", round, tok, errs[tok])
			}
		}
		want := strings.Repeat(fmt.Sprintf("token %d\n", writers), 1000)
		if got := content(t, path); got != want || token(t, path) != writers {
			t.Fatalf("round %d: the file ends with %.20q (token %d), want token %d's", round, got, token(t, path), writers)
		}
	}
}

// Bad input is named and writes nothing.
func TestWriteFileRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		path  string
		token int64
	}{
		{filepath.Join(dir, "f"), 0},
		{filepath.Join(dir, "f"), -3},
		{filepath.Join(dir, "g.fence"), 1},
		{dir + "/", 1},
	} {
		if err := write(t, c.path, c.token, "x"); !errors.Is(err, events.ErrInvalid) {
			t.Errorf("%q token %d: %v, want invalid input", c.path, c.token, err)
		}
	}
	noStrays(t, dir)
}
