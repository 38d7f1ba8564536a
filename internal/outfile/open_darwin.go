package outfile

import "golang.org/x/sys/unix"

// openUp opens a directory above the target to stat it. macOS has no
// O_PATH: it is opened for reading, so a directory above that the caller
// cannot read makes the check fail, and the output is refused.
const openUp = unix.O_RDONLY
