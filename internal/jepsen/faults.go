package jepsen

import (
	"fmt"
	"slices"
	"strings"
)

// Fault is one class of fault the nemesis injects, once per trial.
type Fault string

const (
	FaultNone        Fault = "none"
	FaultKillRun     Fault = "kill-run"     // SIGKILL the holder's run
	FaultKillJob     Fault = "kill-job"     // SIGKILL the holder's job
	FaultPauseRun    Fault = "pause-run"    // SIGSTOP the holder's run past its TTL, then SIGCONT
	FaultPauseGroup  Fault = "pause-group"  // the same to its run and its job's process group
	FaultKillAcquire Fault = "kill-acquire" // SIGKILL a run soon after it starts, mid-acquire
	FaultCutDB       Fault = "cut-db"       // terminate the holder's database backends (PostgreSQL)
)

// AllFaults lists every class, in the order of the report.
var AllFaults = []Fault{FaultNone, FaultKillRun, FaultKillJob, FaultPauseRun, FaultPauseGroup, FaultKillAcquire, FaultCutDB}

// Pause reports a class that stops the holder without killing it: it runs
// until its take-over trials reach the target (Config.TakeOvers).
func (f Fault) Pause() bool { return f == FaultPauseRun || f == FaultPauseGroup }

// Forces reports a class whose contenders take the stale lock over with
// --force, as an operator would once its holder stopped heartbeating: a
// holder on another host that was killed or paused is judged by its TTL
// alone, and a stale lock goes only to --force.
func (f Fault) Forces() bool {
	return f.Pause() || f == FaultKillRun || f == FaultKillAcquire || f == FaultCutDB
}

// ParseFaults reads a comma-separated list of classes ("all": every one).
func ParseFaults(s string) ([]Fault, error) {
	if s == "all" || s == "" {
		return AllFaults, nil
	}
	var out []Fault
	for _, name := range strings.Split(s, ",") {
		f := Fault(strings.TrimSpace(name))
		if !slices.Contains(AllFaults, f) {
			return nil, fmt.Errorf("-faults: unknown fault %q (want a list of %v, or all)", name, AllFaults)
		}
		out = append(out, f)
	}
	return out, nil
}

// Store is where the ledger lives.
type Store string

const (
	SQLite   Store = "sqlite"
	Postgres Store = "postgres"
)
