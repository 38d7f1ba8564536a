package invocation

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// Interrupt is the cause of a command's context when a signal cancelled
// it (the process's one handler of INT, TERM and HUP, in cli.Main, cancels
// the context of the command that runs with the first it receives), and a
// command that failed after it (Err): it exits 128+N, as a shell reports a
// command killed by signal N, and not with the code of what it gave up.
type Interrupt struct {
	Signal syscall.Signal
	Err    error
}

func (i *Interrupt) Error() string {
	if i.Err == nil {
		return "received " + unix.SignalName(i.Signal)
	}
	return fmt.Sprintf("interrupted by %s: %v", unix.SignalName(i.Signal), i.Err)
}
func (i *Interrupt) Unwrap() error { return i.Err }

// Interrupted is the signal that cancelled ctx; 0 when none did.
func Interrupted(ctx context.Context) syscall.Signal {
	var i *Interrupt
	if errors.As(context.Cause(ctx), &i) {
		return i.Signal
	}
	return 0
}

// ForwardsSignals is the annotation of a command that forwards signals
// (run): QUIT is handled for it too, and every signal handled reaches it
// on Globals.Signals, the first of which also cancelled its context.
const ForwardsSignals = "forwards-signals"
