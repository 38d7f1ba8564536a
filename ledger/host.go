package ledger

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Host identifies this machine and the boot it is in.
type Host struct {
	ID     string // host_id written into lock records (the hostname)
	BootID string // /proc/sys/kernel/random/boot_id; "" where unknown
}

// HostIDEnv names this host where the hostname does not (containers that
// share one, hosts behind one name).
const HostIDEnv = "LOCKLEDGER_HOST_ID"

// ThisHost reads the host identity: LOCKLEDGER_HOST_ID, else the hostname.
func ThisHost() Host {
	name := os.Getenv(HostIDEnv)
	if name == "" {
		var err error
		if name, err = os.Hostname(); err != nil || name == "" {
			name = "unknown-host"
		}
	}
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return Host{ID: name, BootID: strings.TrimSpace(string(b))}
}

// Liveness answers whether a process on this host is alive.
type Liveness int

const (
	Alive Liveness = iota
	Gone
	Unknown
)

// ProcessProbe inspects processes on this host.
type ProcessProbe interface {
	// Probe reports whether pid is alive, and its start time ("" if unknown).
	Probe(pid int) (Liveness, string)
}

// JobProbe is a ProcessProbe that also finds the processes a holder's job
// left running after the holder itself is gone. `lockledger run` gives its
// command LOCKLEDGER_REQUEST_ID, which every process it starts inherits;
// those processes keep the lock held, as a process that inherited an
// flock(2)'d descriptor keeps an flock.
type JobProbe interface {
	JobProcesses(requestID string) []int
}

// JobEnv is the environment variable that marks a job's processes.
const JobEnv = "LOCKLEDGER_REQUEST_ID"

// procProbe is the real probe: kill(pid, 0), /proc/PID/stat and
// /proc/PID/environ.
type procProbe struct {
	mu   sync.Mutex
	at   time.Time
	jobs map[string][]int // request id -> pids, from one scan of /proc
}

// jobScanFresh is how long a scan of /proc that found a job's processes
// answers for it again (a lock held that way is judged on every attempt of
// every waiter).
const jobScanFresh = 200 * time.Millisecond

// JobProcesses lists the live processes whose environment (as they were
// started) carries LOCKLEDGER_REQUEST_ID=requestID, other than this one.
// Processes of other users cannot be read and are not seen.
func (p *procProbe) JobProcesses(requestID string) []int {
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

// scanJobs maps each LOCKLEDGER_REQUEST_ID value found in /proc to the
// processes carrying it. It reads every process's environment, so it runs
// once at the end of each `run`: each file is read with plain open, read and
// close into one buffer (os.ReadFile would stat it, register it with the
// poller and allocate for each), and searched for the key in place. Pids
// at or below floor are skipped (see ForkMark).
func scanJobs(floor int) map[string][]int {
	jobs := map[string][]int{}
	d, err := os.Open("/proc")
	if err != nil {
		return jobs
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return jobs
	}
	key := []byte("\x00" + JobEnv + "=")
	self := os.Getpid()
	buf := make([]byte, 64<<10)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == self || pid <= floor {
			continue
		}
		var env []byte
		if env, buf = readEnviron("/proc/"+name+"/environ", buf); len(env) == 0 {
			continue
		}
		if id, ok := envValue(env, key); ok {
			jobs[id] = append(jobs[id], pid)
		}
	}
	return jobs
}

// readEnviron reads path whole into buf, grown as needed; nil when it
// cannot be read (gone, another user's, a kernel thread's empty one).
func readEnviron(path string, buf []byte) (env, grown []byte) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, buf
	}
	defer unix.Close(fd)
	n := 0
	for {
		if n == len(buf) {
			buf = append(buf, make([]byte, len(buf))...)
		}
		k, err := unix.Read(fd, buf[n:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, buf
		}
		if k == 0 {
			return buf[:n], buf
		}
		n += k
	}
}

// envValue is the value of the first variable key names in env (NUL
// separated); key is "\x00NAME=", so that a match starts a variable.
func envValue(env, key []byte) (string, bool) {
	i := 0
	if !bytes.HasPrefix(env, key[1:]) {
		if i = bytes.Index(env, key); i < 0 {
			return "", false
		}
		i++
	}
	v := env[i+len(key)-1:]
	if end := bytes.IndexByte(v, 0); end >= 0 {
		v = v[:end]
	}
	return string(v), true
}

func (*procProbe) Probe(pid int) (Liveness, string) {
	if pid <= 0 {
		return Unknown, ""
	}
	err := unix.Kill(pid, 0)
	switch {
	case err == nil, errors.Is(err, unix.EPERM):
		return Alive, ProcessStart(pid)
	case errors.Is(err, unix.ESRCH):
		return Gone, ""
	}
	return Unknown, ""
}

// ProcessStart returns the start time of pid in clock ticks since boot
// (field 22 of /proc/PID/stat), or "" when it cannot be read. Together with
// the boot id it tells a live holder from a reused pid.
func ProcessStart(pid int) string {
	return readStat(pid).start
}

// procStat is what lockledger reads of /proc/PID/stat.
type procStat struct {
	state string // field 3: R, S, D, Z...; "" when pid cannot be read
	ppid  int    // field 4
	start string // field 22, clock ticks since boot
}

func readStat(pid int) procStat {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}
	}
	fields := strings.Fields(s[i+1:])
	// fields[0] is field 3 (state); starttime is field 22.
	if len(fields) < 20 {
		return procStat{}
	}
	ppid, _ := strconv.Atoi(fields[1])
	return procStat{state: fields[0], ppid: ppid, start: fields[19]}
}

// processRunning reports whether pid is a process that has not exited (a
// zombie has) and, when start is known, is still the one started then.
func processRunning(pid int, start string) bool {
	if pid <= 0 {
		return false
	}
	st := readStat(pid)
	switch {
	case st.state == "" || st.state == "Z" || st.state == "X":
		return false
	case start != "" && st.start != start:
		return false // the pid names another process now
	}
	return true
}

// isLockledger reports whether pid runs this program: the same executable
// as this process, or that executable's file since replaced (an upgrade
// while an older `lockledger run` kept running).
func isLockledger(pid int) bool {
	self, err := os.Executable()
	if err != nil {
		return false
	}
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		return false
	}
	return exe == self || strings.TrimSuffix(exe, " (deleted)") == self
}

// pokeRunner sends SIGUSR1 to pid if it is a lockledger process (the same
// executable as this one): a `lockledger run` treats it as "check your lock
// now". Any other process is left alone, since SIGUSR1 would kill most.
func pokeRunner(pid int, log interface {
	Debug(msg string, args ...any)
}) {
	if pid <= 0 || pid == os.Getpid() {
		return
	}
	if !isLockledger(pid) {
		log.Debug("previous holder is not a lockledger process; not signalling it", "pid", pid)
		return
	}
	_ = unix.Kill(pid, unix.SIGUSR1)
}
