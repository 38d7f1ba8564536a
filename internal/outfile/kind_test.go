package outfile_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lockledger/lockledger/internal/outfile"
)

// TestNotRegularNamesWhatIsThere: NotRegular names each kind of file by
// an lstat of a real one ("" for a regular file), and Create refuses a
// target of each kind but a regular file (and a symlink, refused by its
// own rule) in those words.
func TestNotRegularNamesWhatIsThere(t *testing.T) {
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	write(t, path("file"), "x")
	if err := os.Mkdir(path("dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path("fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("file", path("link")); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", path("sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for p, want := range map[string]string{path("file"): "", path("dir"): "a directory", path("fifo"): "a FIFO",
		path("link"): "a symlink", path("sock"): "a socket", "/dev/null": "a device"} {
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		if got := outfile.NotRegular(uint32(st.Mode)); got != want { // uint16 on macOS
			t.Errorf("NotRegular of %s: %q, want %q", p, got, want)
		}
		if want == "" || want == "a symlink" || p == "/dev/null" {
			continue
		}
		f, err := outfile.Create(p)
		var refused *outfile.RefusedError
		if !errors.As(err, &refused) || !strings.Contains(refused.Rule, "is "+want+":") {
			if f != nil {
				f.Abort()
			}
			t.Errorf("Create over %s: %v, want refused as %s", p, err, want)
		}
	}
}

// TestOpenRegularRefusesWhatIsNotAFile: a FIFO no process writes is
// refused at once (not waited on), as are a directory and a device, each
// with ErrNotRegular naming its type; O_NOFOLLOW refuses a symlink; a
// regular file opens.
func TestOpenRegularRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	file, fifo, link := filepath.Join(dir, "file"), filepath.Join(dir, "fifo"), filepath.Join(dir, "link")
	write(t, file, "x")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("file", link); err != nil {
		t.Fatal(err)
	}
	for p, kind := range map[string]string{fifo: "p", dir: "d", "/dev/null": "D"} {
		f, fi, err := outfile.OpenRegular(p, os.O_RDONLY, 0)
		if !errors.Is(err, outfile.ErrNotRegular) || f != nil || fi != nil || !strings.Contains(err.Error(), "("+kind) {
			t.Errorf("OpenRegular(%s) = %v, %v, %v; want ErrNotRegular naming %q", p, f, fi, err, kind)
		}
	}
	if _, _, err := outfile.OpenRegular(link, os.O_RDONLY|syscall.O_NOFOLLOW, 0); !errors.Is(err, syscall.ELOOP) {
		t.Errorf("OpenRegular(symlink, O_NOFOLLOW) = %v, want ELOOP", err)
	}
	f, fi, err := outfile.OpenRegular(file, os.O_RDONLY, 0)
	if err != nil || fi.Size() != 1 {
		t.Fatalf("OpenRegular(file) = %v, %v", fi, err)
	}
	f.Close()
}
