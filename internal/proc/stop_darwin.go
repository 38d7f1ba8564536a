package proc

import "golang.org/x/sys/unix"

// pidfdSignal: macOS has no pidfd, so SignalIf's check and kill are two
// steps: a process that exits between them, and whose pid is taken at once
// by a new process this user may signal, gets sig. Linux has no such
// window.
func pidfdSignal(int, unix.Signal, func() bool) bool { return false }
