package lockcmd

import "syscall"

// commandAttr starts run's command in a process group of its own. macOS
// has no parent-death signal: a run killed outright (SIGKILL) leaves its
// command running. The command still carries LOCKLEDGER_REQUEST_ID, so it
// keeps the lock held while it runs, until the lock's TTL passes with no
// heartbeat.
func commandAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
