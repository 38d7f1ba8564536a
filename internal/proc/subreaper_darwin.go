package proc

import (
	"errors"

	"golang.org/x/sys/unix"
)

// ErrNoSubreaper: macOS has no child subreaper. A descendant orphaned by
// its parent's exit goes to launchd, so `run` finds what its command left
// running by its process group and its LOCKLEDGER_REQUEST_ID only.
var ErrNoSubreaper = errors.New("this system has no child subreaper")

// BecomeSubreaper fails on macOS (ErrNoSubreaper).
func BecomeSubreaper() error { return ErrNoSubreaper }

// childrenOf lists pid's children, from the parent field of every
// process's kinfo_proc.
func childrenOf(pid int) []int {
	all, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil
	}
	var out []int
	for i := range all {
		if int(all[i].Eproc.Ppid) == pid && all[i].Proc.P_pid > 0 {
			out = append(out, int(all[i].Proc.P_pid))
		}
	}
	return out
}
