package lockfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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
	rootFI, err := os.Stat(root)
	if err != nil || !rootFI.IsDir() {
		return p
	}
	locksFI, _ := os.Stat(locks)
	for dir, rest := p, ""; ; {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			switch {
			case os.SameFile(fi, rootFI):
				return filepath.Join(root, rest)
			case locksFI != nil && locksFI.IsDir() && os.SameFile(fi, locksFI):
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
