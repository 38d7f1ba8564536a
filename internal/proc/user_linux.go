package proc

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// UID is the real user id of pid (the first field of the Uid line of
// /proc/PID/status); ok is false when it cannot be read. The real uid is
// the user who started the process: a set-user-id program keeps it, and
// only a privileged process can change it.
func UID(pid int) (uid int, ok bool) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, found := strings.CutPrefix(s.Text(), "Uid:"); found {
			fields := strings.Fields(v)
			if len(fields) == 0 {
				return 0, false
			}
			n, err := strconv.Atoi(fields[0])
			return n, err == nil
		}
	}
	return 0, false
}
