package outfile

import "golang.org/x/sys/unix"

// openUp opens a directory above the target only to stat it (O_PATH: no
// read permission needed).
const openUp = unix.O_PATH
