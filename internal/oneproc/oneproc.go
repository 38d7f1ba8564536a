// Package oneproc keeps a lockledger process on one processor until it
// runs a command that works in parallel.
//
// A lock command (run, acquire, release, status, ...) is a few
// milliseconds of sequential work. Started with a second processor, the Go
// runtime starts a thread for the goroutines that begin during package
// initialisation and wakes it as they come and go, which costs a short
// command more than the overlap gains (BENCHMARKS.md has the figures).
// The command line holds one processor from early in its initialisation
// (package start, imported by main.go alone), unless GOMAXPROCS says how
// many, and releases the rest for
// every command that is not sequential: verify's pipeline, the folds and
// exports of the whole log. Tests and library users, which do not import
// start, are never held.
package oneproc

import (
	"runtime"
	"strconv"
	"sync"
	"syscall"
)

var (
	mu   sync.Mutex
	held bool
)

// Hold puts the process on one processor, unless GOMAXPROCS in the
// environment says how many it has or it has only one.
func Hold() {
	mu.Lock()
	defer mu.Unlock()
	if explicit() || held || runtime.GOMAXPROCS(0) == 1 {
		return
	}
	runtime.GOMAXPROCS(1)
	held = true
}

// explicit reports whether GOMAXPROCS in the environment is a count of
// processors. The runtime ignores any other value (empty, 0, a word), and
// so does Hold.
func explicit() bool {
	v, _ := syscall.Getenv("GOMAXPROCS")
	n, err := strconv.Atoi(v)
	return err == nil && n > 0
}

// Release gives a held process the processors the runtime would choose
// itself (runtime.SetDefaultGOMAXPROCS); it does nothing to one not held.
func Release() {
	mu.Lock()
	defer mu.Unlock()
	if held {
		runtime.SetDefaultGOMAXPROCS()
		held = false
	}
}

// Held reports whether Hold put the process on one processor and Release
// has not given the others back.
func Held() bool {
	mu.Lock()
	defer mu.Unlock()
	return held
}
