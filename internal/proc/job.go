package proc

import (
	"bytes"
	"maps"
	"slices"
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
	return slices.Sorted(maps.Keys(jobPIDsAbove(0, requestID)))
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
