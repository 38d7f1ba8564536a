package trust

import (
	"errors"

	"golang.org/x/sys/unix"
)

// exchange swaps the files at a and b at once (renameat2 RENAME_EXCHANGE).
// It reports false, and no error, where they cannot be swapped: b does not
// exist, or the file system cannot swap.
func exchange(a, b string) (bool, error) {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
		return false, nil
	}
	return false, err
}
