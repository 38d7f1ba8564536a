package proc

import (
	"os/exec"
	"syscall"
)

// Detached is name with args as a process of its own session (setsid), so
// that neither a signal to its starter's process group (a run stopping
// its job) nor the starter's death reaches it: the one way lockledger
// starts a process that must outlive its starter (a recorder of a lost
// lock or of a fence's refusal). Stdin and stdout are /dev/null unless
// the caller sets them; once started, init (or the nearest subreaper)
// reaps it if its starter does not.
func Detached(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd
}
