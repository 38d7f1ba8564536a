package lockcmd

import (
	"errors"
	"time"

	"github.com/lockledger/lockledger/cli/invocation"
)

// spawnWatcher: macOS has no pidfd to hand a watcher the holder by, so a
// holder that is a shell running a -c script is not watched; the warning
// for a known wrapper (checkHolder) still comes at once.
func spawnWatcher(*invocation.Globals, string, int, string) error { return errors.ErrUnsupported }

// waitPidfd is never reached on macOS (no watcher is started).
func waitPidfd(int, time.Duration) (bool, error) { return false, errors.ErrUnsupported }
