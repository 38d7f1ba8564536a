package proc

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// A job's processes are found by the LOCKLEDGER_REQUEST_ID they inherited
// (see JobProbe). That finds what left the command's process group (setsid,
// a double fork), but not a process started with a cleared or rewritten
// environment, unless it is below a subreaper that looks (see
// Descendants). Only processes of this process's real user count: anyone
// can start a process carrying a given request id, and one of another user
// must not keep a lock held nor be stopped as the job's.

// JobEnv is the environment variable that marks a job's processes.
const JobEnv = "LOCKLEDGER_REQUEST_ID"

// JobPIDs lists the processes of this user carrying
// LOCKLEDGER_REQUEST_ID=requestID, from a scan of /proc made now, other
// than this process and its ancestors (a lockledger started from inside
// the job must not stop or await what started it).
func JobPIDs(requestID string) []int {
	var pids []int
	for pid := range jobPIDsAbove(0, requestID) {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	return pids
}

// jobPIDsAbove maps each process carrying one of requestIDs (as JobPIDs
// finds them, from one scan of /proc) above floor (see ForkMark) to the
// request id it carries.
func jobPIDsAbove(floor int, requestIDs ...string) map[int]string {
	out := map[int]string{}
	var scan map[string][]int
	for _, id := range requestIDs {
		if id == "" {
			continue
		}
		if scan == nil {
			scan = scanJobs(floor)
		}
		for _, pid := range scan[id] {
			out[pid] = id
		}
	}
	if len(out) == 0 {
		return out
	}
	for pid := range ancestors() {
		delete(out, pid)
	}
	return out
}

// scanJobs maps each LOCKLEDGER_REQUEST_ID value found in /proc to the
// processes of this process's real user carrying it. It reads every
// process's environment, so it runs once at the end of each `run`: each
// file is read with plain open, read and close into one buffer
// (os.ReadFile would stat it, register it with the poller and allocate for
// each), and searched for the key in place. Pids at or below floor are
// skipped (see ForkMark).
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
	self, me := os.Getpid(), os.Getuid()
	buf := make([]byte, 64<<10)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == self || pid <= floor {
			continue
		}
		var env []byte
		if env, buf = readWhole("/proc/"+name+"/environ", buf); len(env) == 0 {
			continue
		}
		id, ok := envValue(env, key)
		if !ok {
			continue
		}
		if uid, ok := UID(pid); !ok || uid != me {
			continue // another user's, or gone since
		}
		jobs[id] = append(jobs[id], pid)
	}
	return jobs
}

// readWhole reads path whole into buf, grown as needed, with one open and
// no stat (/proc reports size 0); nil when it cannot be read (gone,
// another user's), empty (not nil) when it holds nothing (a kernel
// thread's environ).
func readWhole(path string, buf []byte) (data, grown []byte) {
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
