package pgtest

import "syscall"

// serverAttr runs a server program as cred. macOS has no parent-death
// signal: a test binary killed outright leaves its servers running.
func serverAttr(cred *syscall.Credential, death syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred}
}
