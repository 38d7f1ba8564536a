package lockcmd

import (
	"math"
	"time"
)

// runObject is run's --json answer: one object on stdout, written once
// the command has exited (after everything it wrote there).
type runObject struct {
	// Status is what became of the lock: released (the release is
	// recorded), lost (taken from run, or run's deadline passed: the
	// command was stopped, or ran on with --on-lost warn), or
	// release_failed (the release could not be recorded).
	Status       string `json:"status"`
	LockName     string `json:"lock_name"`
	RequestID    string `json:"request_id"`
	FencingToken int64  `json:"fencing_token"`
	// Result is what the release records: success, failure or cancelled.
	Result string `json:"result,omitempty"`
	// CommandExitCode is CMD's own code (128+N for signal N), null when
	// CMD was never started; ExitCode is run's.
	CommandExitCode *int    `json:"command_exit_code"`
	ExitCode        int     `json:"exit_code"`
	WaitedSeconds   float64 `json:"waited_seconds"`
	DurationSeconds float64 `json:"duration_seconds"`
	Message         string  `json:"message,omitempty"`
}

// secondsMS is d in seconds, to the millisecond.
func secondsMS(d time.Duration) float64 { return math.Round(d.Seconds()*1000) / 1000 }

// ExecError is run's command that could not be started: it exits 127 (no
// such command) or 126 (cannot be executed), as a shell does.
type ExecError struct {
	Code    int
	Command string
	Why     string
}

func (e *ExecError) Error() string { return "run: " + e.Why }
