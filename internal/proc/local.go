package proc

import (
	"os"
	"sync"
	"time"
)

// Local is the Probe and JobProbe of this host: kill(pid, 0), the
// process's start time (ReadStat) and the job scan (see JobPIDs). The zero
// Local is ready.
type Local struct {
	mu   sync.Mutex
	at   time.Time
	jobs map[string][]int // request id -> pids, from one scan of /proc
}

// selfStart is this process's start time, read once: the Go API's
// holders are this process, probed on every acquisition.
var selfStart = sync.OnceValue(func() string { return Start(os.Getpid()) })

// jobScanFresh is how long a scan of /proc that found a job's processes
// answers for it again (a lock held that way is judged on every attempt of
// every waiter).
const jobScanFresh = 200 * time.Millisecond

func (*Local) Probe(pid int) (Liveness, string) {
	if pid == os.Getpid() {
		if start := selfStart(); start != "" {
			return Alive, start
		}
	}
	live := Check(pid)
	if live == Gone && !jobScanWorks() {
		// The processes its job left running cannot be looked for:
		// not provably gone, so judged by its TTL.
		return Unknown, ""
	}
	if live != Alive {
		return live, ""
	}
	return Alive, Start(pid)
}

// JobProcesses lists the live processes of this user whose environment (as
// they were started) carries LOCKLEDGER_REQUEST_ID=requestID, other than
// this one (see scanJobs).
func (p *Local) JobProcesses(requestID string) []int {
	if requestID == "" {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if pids := p.jobs[requestID]; len(pids) > 0 && time.Since(p.at) <= jobScanFresh {
		return pids
	}
	// "None" always comes from a scan made now: one made earlier may
	// predate a process the job started since.
	p.jobs, p.at = scanJobs(0), time.Now()
	return p.jobs[requestID]
}
