package proc

import (
	"os"

	"golang.org/x/sys/unix"
)

// PokeRunner sends SIGUSR1 to pid if it is a lockledger process (the same
// executable as this one): a `lockledger run` treats it as "check your lock
// now". Any other process is left alone, since SIGUSR1 would kill most.
func PokeRunner(pid int, log interface {
	Debug(msg string, args ...any)
}) {
	if pid <= 0 || pid == os.Getpid() {
		return
	}
	if !IsLockledger(pid) {
		log.Debug("previous holder is not a lockledger process; not signalling it", "pid", pid)
		return
	}
	_ = unix.Kill(pid, unix.SIGUSR1)
}
