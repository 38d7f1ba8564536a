package pgtest

import "syscall"

// serverAttr runs a server program as cred, sent death (PostgreSQL's
// immediate shutdown is SIGQUIT: the postmaster takes its backends down and
// removes its shared memory; PgBouncer's is SIGTERM) when its parent goes.
// The kernel sends it when the thread that started the
// child exits: startServer starts it on a thread of its own
// (proc.StartLocked), so that is when the test binary exits. The
// directory is left behind in that case.
func serverAttr(cred *syscall.Credential, death syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Pdeathsig: death}
}
