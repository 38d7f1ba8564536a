package proc

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// scanJobs maps each LOCKLEDGER_REQUEST_ID value found in /proc to the
// processes of this process's real user carrying it. It reads every
// process's environment, so it runs once at the end of each `run`: each
// file is read with plain open, read and close into one buffer
// (os.ReadFile would stat it, register it with the poller and allocate for
// each), and searched for the key in place. Pids at or below floor are
// skipped (see ForkMark).
func scanJobs(floor int) map[string][]int {
	jobs := map[string][]int{}
	names, err := readNames("/proc")
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

// jobScanWorks: /proc always tells (see the darwin counterpart).
func jobScanWorks() bool { return true }
