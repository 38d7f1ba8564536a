package replay

import (
	"runtime/debug"
	"sync"
)

// verifyGCPercent is the garbage collector's target while a verify runs.
// verify allocates fast (every row's columns, body and event) but keeps
// little: batches in flight and one record per lock. At the default of
// 100 the collector runs every few thousand rows and takes a fifth of the
// CPU; at 400 it runs a quarter as often, for a heap still in the tens of
// MiB. A higher setting (or GOGC=off) is left alone, and GOMEMLIMIT still
// applies.
const verifyGCPercent = 400

// foldGCPercent is the target while AsOf folds: it allocates per row too
// (each body, a heartbeat's holder) and keeps one record per lock, but its
// peak memory is held to a bound (BENCHMARKS.md), which 400 would come
// near on a large log.
const foldGCPercent = 200

var gcTune struct {
	sync.Mutex
	users int
	saved int
}

// relaxGC raises the GC target to percent for the duration of a verify or
// a fold (while another is running, its target stays); the returned
// function restores it once the last of them is done.
func relaxGC(percent int) (restore func()) {
	gcTune.Lock()
	defer gcTune.Unlock()
	if gcTune.users == 0 {
		prev := debug.SetGCPercent(percent)
		if prev < 0 || prev >= percent {
			debug.SetGCPercent(prev)
			return func() {}
		}
		gcTune.saved = prev
	}
	gcTune.users++
	return func() {
		gcTune.Lock()
		defer gcTune.Unlock()
		gcTune.users--
		if gcTune.users == 0 {
			debug.SetGCPercent(gcTune.saved)
		}
	}
}
