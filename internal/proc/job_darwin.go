package proc

import (
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// scanJobs maps each LOCKLEDGER_REQUEST_ID value found in the environments
// of this user's processes (kern.proc.all, then each one's
// kern.procargs2) to the processes carrying it, as the Linux scan of /proc
// does. Pids at or below floor are skipped (see ForkMark; on macOS there
// is no mark, so floor is 0).
func scanJobs(floor int) map[string][]int {
	jobs := map[string][]int{}
	all, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return jobs
	}
	key := []byte("\x00" + JobEnv + "=")
	self, me := os.Getpid(), os.Getuid()
	for i := range all {
		pid := int(all[i].Proc.P_pid)
		if pid <= 0 || pid == self || pid <= floor || int(all[i].Eproc.Pcred.P_ruid) != me {
			continue
		}
		p, ok := readProcArgs(pid)
		if !ok || len(p.env) == 0 {
			continue
		}
		id, ok := envValue(p.env, key)
		if !ok {
			continue
		}
		if uid, ok := UID(pid); !ok || uid != me {
			continue // gone since, its pid taken by another user's process
		}
		jobs[id] = append(jobs[id], pid)
	}
	return jobs
}

// jobScanWorks reports whether kern.procargs2 reads this process's own
// arguments back. Where it does not, no job's processes can be found, so a
// holder whose process is gone is not provably dead (see Local.Probe).
var jobScanWorks = sync.OnceValue(func() bool {
	p, ok := readProcArgs(os.Getpid())
	return ok && len(p.args) == len(os.Args)
})
