package fence

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/lockfile"
	"github.com/lockledger/lockledger/internal/outfile"
)

// SidecarSuffix names the file beside PATH that keeps PATH's current
// token: PATH.fence. It is also the file WriteFile locks.
const SidecarSuffix = ".fence"

// tokenWidth is how a token is written in a sidecar: zero-padded to a
// fixed width, so that a new token overwrites the old one in place, in
// one small write, never leaving a shorter or longer number behind.
const tokenWidth = 20

// ErrNotRegular is wrapped when the path (or its sidecar) is something
// WriteFile will not replace or read: a symlink, a directory, a FIFO, a
// device or a socket.
var ErrNotRegular = outfile.ErrNotRegular

// SidecarOf is the sidecar of path: path + SidecarSuffix.
func SidecarOf(path string) string { return path + SidecarSuffix }

// WriteFile puts data at path when token is not below the token kept in
// path's sidecar (SidecarOf), and then keeps token there. A lower token
// is refused with a *StaleError (Fence events.FenceFileWrite) and the
// file is left as it was.
//
// data is read to its end first, into a new file in path's directory,
// and synced. Then, under an flock of the sidecar (waited for while ctx
// lasts), the sidecar's token is checked, the new token written and
// synced, and the new file renamed over path, the directory synced: the
// token is on disk before the content it allows, so no crash lets a lower
// token's write land after a higher one's. The new file takes an existing
// file's permission bits (a new one: 0666 less the umask).
//
// path itself is never followed: a symlink there is refused, as are a
// directory, a FIFO (never opened, so never waited on) and anything else
// that is not a regular file (ErrNotRegular); the same for the sidecar.
// A path whose name ends in SidecarSuffix is refused: it would be another
// file's token.
func WriteFile(ctx context.Context, path string, token int64, data io.Reader) error {
	if err := ValidToken("fencing token", token); err != nil {
		return err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("fence: %w", err)
	}
	base := filepath.Base(abs)
	if path == "" || strings.HasSuffix(path, "/") || base == "/" || base == "." || base == ".." {
		return events.Invalid("path", path, "must name a file")
	}
	if strings.HasSuffix(base, SidecarSuffix) {
		return events.Invalid("path", path, "must not end in "+SidecarSuffix+": that is where a file's fencing token is kept")
	}
	dir, err := unix.Open(filepath.Dir(abs), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: filepath.Dir(abs), Err: err}
	}
	defer unix.Close(dir)
	// Refused before data is read: a FIFO or a directory at path fails
	// here, whatever stdin holds.
	perm, err := targetPerm(dir, abs, base)
	if err != nil {
		return err
	}
	tmp, tmpName, err := createTemp(dir, abs, perm)
	if err != nil {
		return err
	}
	placed := false
	defer func() {
		tmp.Close()
		if !placed {
			_ = unix.Unlinkat(dir, tmpName, 0)
		}
	}()
	if _, err := io.Copy(tmp, data); err != nil {
		return fmt.Errorf("fence: writing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("fence: %w", err)
	}

	side, err := openSidecar(dir, abs, base)
	if err != nil {
		return err
	}
	defer side.Close()
	unlock, err := lockfile.Flock(ctx, int(side.Fd()), -1, 10*time.Millisecond)
	if err != nil {
		return fmt.Errorf("fence: lock %s: %w", side.Name(), err)
	}
	defer unlock()
	current, err := readToken(side)
	if err != nil {
		return err
	}
	if token < current {
		return &StaleError{Fence: events.FenceFileWrite, Resource: abs, Token: token, Current: current}
	}
	// Looked at again under the flock: what stands at path now is what
	// the rename replaces.
	if _, err := targetPerm(dir, abs, base); err != nil {
		return err
	}
	if token > current {
		if err := writeToken(side, token); err != nil {
			return err
		}
	}
	if err := unix.Renameat(dir, tmpName, dir, base); err != nil {
		return &os.LinkError{Op: "rename", Old: tmp.Name(), New: abs, Err: err}
	}
	placed = true
	if err := unix.Fsync(dir); err != nil {
		return &os.PathError{Op: "fsync", Path: filepath.Dir(abs), Err: err}
	}
	return nil
}

// FileToken is the token kept for path (0 when it has none: no sidecar,
// or an empty one), read without the flock.
func FileToken(path string) (int64, error) {
	side := SidecarOf(path)
	fd, err := unix.Open(side, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return 0, nil
	}
	if err != nil {
		return 0, sidecarOpenErr(side, err)
	}
	f := os.NewFile(uintptr(fd), side)
	defer f.Close()
	if err := regular(f); err != nil {
		return 0, err
	}
	return readToken(f)
}

// targetPerm is the permission bits of the regular file at path (0666
// when there is none); anything else there is refused.
func targetPerm(dir int, path, base string) (uint32, error) {
	var st unix.Stat_t
	err := unix.Fstatat(dir, base, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return 0o666, nil
	}
	if err != nil {
		return 0, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if k := outfile.NotRegular(uint32(st.Mode)); k != "" {
		return 0, &os.PathError{Op: "write", Path: path, Err: fmt.Errorf("%w: %s", ErrNotRegular, k)}
	}
	return uint32(st.Mode) & 0o7777, nil
}

// createTemp creates the new file beside path (outfile.CreateTemp) with
// exactly the permission bits perm.
func createTemp(dir int, path string, perm uint32) (*os.File, string, error) {
	f, name, err := outfile.CreateTemp(dir, path, perm)
	if err != nil || perm == 0o666 {
		return f, name, err
	}
	// An existing file's bits, exactly (creation took the umask off).
	if err := unix.Fchmod(int(f.Fd()), perm); err != nil {
		f.Close()
		_ = unix.Unlinkat(dir, name, 0)
		return nil, "", &os.PathError{Op: "chmod", Path: f.Name(), Err: err}
	}
	return f, name, nil
}

// openSidecar opens (creating it if need be) path's sidecar for the
// flock and the token. O_NONBLOCK: a FIFO put there opens at once, and is
// refused, rather than waiting for a writer.
func openSidecar(dir int, path, base string) (*os.File, error) {
	side := SidecarOf(path)
	fd, err := unix.Openat(dir, base+SidecarSuffix, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o666)
	if err != nil {
		return nil, sidecarOpenErr(side, err)
	}
	f := os.NewFile(uintptr(fd), side)
	if err := regular(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func sidecarOpenErr(side string, err error) error {
	switch {
	case errors.Is(err, unix.ELOOP):
		err = fmt.Errorf("%w: a symlink", ErrNotRegular)
	case errors.Is(err, unix.EISDIR):
		err = fmt.Errorf("%w: a directory", ErrNotRegular)
	}
	return &os.PathError{Op: "open", Path: side, Err: err}
}

func regular(f *os.File) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return &os.PathError{Op: "stat", Path: f.Name(), Err: err}
	}
	if k := outfile.NotRegular(uint32(st.Mode)); k != "" {
		return &os.PathError{Op: "open", Path: f.Name(), Err: fmt.Errorf("%w: %s", ErrNotRegular, k)}
	}
	return nil
}

// readToken reads a sidecar's token: 0 when it is empty. Anything but a
// token there is an error: a fence that cannot read its token refuses.
func readToken(f *os.File) (int64, error) {
	b := make([]byte, 64)
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("fence: read %s: %w", f.Name(), err)
	}
	s := strings.TrimSpace(string(b[:n]))
	if s == "" {
		return 0, nil
	}
	t, err := strconv.ParseInt(s, 10, 64)
	if err != nil || t < 1 || n == len(b) {
		return 0, fmt.Errorf("fence: %s holds %q, not a fencing token: the fence refuses every write until it does", f.Name(), s)
	}
	return t, nil
}

// writeToken keeps token in the sidecar, durably, in place.
func writeToken(f *os.File, token int64) error {
	line := fmt.Sprintf("%0*d\n", tokenWidth, token)
	if _, err := f.WriteAt([]byte(line), 0); err != nil {
		return fmt.Errorf("fence: write %s: %w", f.Name(), err)
	}
	if err := f.Truncate(int64(len(line))); err != nil {
		return fmt.Errorf("fence: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fence: %w", err)
	}
	return nil
}
