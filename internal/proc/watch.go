package proc

import (
	"maps"
	"os"
	"slices"

	"golang.org/x/sys/unix"
)

// Watch follows the processes of one or more jobs across scans. A process
// stays followed until it has exited: an exiting process loses its
// environment (and drops out of JobPIDs) a moment before it becomes a
// zombie.
type Watch struct {
	requestIDs []string
	since      ForkMark       // processes created before it are not looked at
	below      bool           // every process below this one is the job's (see Descendants)
	belowOnly  bool           // and only those (see BelowOnly)
	under      int            // every process below this one is the job's too, while it runs (see Below)
	underStart string         // under's start time
	cont       bool           // StopJob continues what it sends TERM (see Continue)
	start      map[int]string // pid -> its start time, when first seen
	job        map[int]string // pid -> the request id it carries
	seen       []int          // in order of first sight
}

// NewWatch follows the processes of the jobs requestIDs.
func NewWatch(requestIDs ...string) *Watch {
	return &Watch{requestIDs: requestIDs, start: map[int]string{}, job: map[int]string{}}
}

// Look scans again and returns the jobs' processes still running.
func (w *Watch) Look() []int {
	found := map[int]string{}
	if !w.belowOnly {
		found = jobPIDsAbove(w.since.floor(), w.requestIDs...)
	}
	below := func(top int) {
		for _, pid := range descendantsOf(top) {
			if _, ok := found[pid]; !ok {
				found[pid] = w.requestIDs[0]
			}
		}
	}
	if w.below && len(w.requestIDs) > 0 {
		ReapExited(0)
		below(os.Getpid())
	}
	if w.under > 0 && len(w.requestIDs) > 0 && Running(w.under, w.underStart) {
		below(w.under)
	}
	for _, pid := range slices.Sorted(maps.Keys(found)) {
		if _, ok := w.start[pid]; ok {
			continue
		}
		if start := Start(pid); start != "" {
			w.start[pid], w.job[pid] = start, found[pid]
			w.seen = append(w.seen, pid)
		}
	}
	var live []int
	for _, pid := range w.seen {
		if Running(pid, w.start[pid]) {
			live = append(live, pid)
		}
	}
	return live
}

// JobOf is the request id pid was seen carrying.
func (w *Watch) JobOf(pid int) string { return w.job[pid] }

// Signal sends sig to pid if it is still the process seen.
func (w *Watch) Signal(pid int, sig unix.Signal) {
	SignalIf(pid, sig, func() bool { return Running(pid, w.start[pid]) })
}

// All is every process of the jobs seen so far, sorted.
func (w *Watch) All() []int {
	return slices.Sorted(slices.Values(w.seen))
}
