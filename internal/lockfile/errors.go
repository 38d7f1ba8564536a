package lockfile

import (
	"errors"
	"fmt"
)

var (
	// ErrUnsafePath: a path is a symlink, a directory or otherwise not what
	// lockledger may touch. *UnsafePathError wraps it.
	ErrUnsafePath = errors.New("unsafe lock path")
	// ErrExists: placing a new lock file found one already there.
	ErrExists = errors.New("lock file exists")
	// ErrBusy: another process held the writer mutex past the wait allowed.
	ErrBusy = errors.New("ledger busy: another process held the writer lock past the busy timeout")
	// ErrClosed: the Dir was used after Close.
	ErrClosed = errors.New("lockfile: root directory used after Close")
	// ErrChangedMeanwhile: the file at a lock path changed between its
	// reading and its linking (KeepAside).
	ErrChangedMeanwhile = errors.New("lock file changed meanwhile")
)

// UnsafePathError reports a path lockledger refuses to touch.
type UnsafePathError struct {
	Path   string
	Reason string
}

func (e *UnsafePathError) Error() string {
	return fmt.Sprintf("%s: %s (refusing to touch it)", e.Path, e.Reason)
}

func (e *UnsafePathError) Unwrap() error { return ErrUnsafePath }
