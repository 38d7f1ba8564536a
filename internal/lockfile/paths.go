package lockfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockledger/lockledger/internal/fileid"
)

// Resolve is p (absolute) with the symlinks of its longest existing prefix
// resolved, so that two names of one place compare equal. The missing rest
// is appended as given. A component that is a dangling symlink is refused:
// creating the directories below it would follow it to wherever it points.
func Resolve(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%s: not an absolute path", p)
	}
	cur, rest := filepath.Clean(p), ""
	for {
		r, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(r, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if fi, lerr := os.Lstat(cur); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return "", &UnsafePathError{Path: cur, Reason: "is a symlink to nothing"}
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return filepath.Clean(p), nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// Within reports whether p is dir or below it (both clean and absolute).
func Within(dir, p string) bool {
	if p == dir {
		return true
	}
	return strings.HasPrefix(p, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}

// SameDirectory returns p (resolved, outside root by name) as the path
// below root or locks it names when one of its existing directories, p
// itself included, is root or locks under another name (the same device
// and inode: a bind mount); otherwise p unchanged.
func SameDirectory(p, root, locks string) string {
	rootID, rootOK := fileid.Dir(root)
	locksID, locksOK := fileid.Dir(locks)
	if !rootOK {
		return p
	}
	for dir, rest := p, ""; ; {
		if id, ok := fileid.Dir(dir); ok {
			switch {
			case id == rootID:
				return filepath.Join(root, rest)
			case locksOK && id == locksID:
				return filepath.Join(locks, rest)
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return p
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}
