package lockcmd

import "syscall"

// commandAttr starts run's command in a process group of its own, killed
// by the kernel if run dies first.
func commandAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
