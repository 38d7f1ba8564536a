package invocation

import (
	"context"
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// Interrupt is the cause of a command's context when a signal cancelled
// it: the process's one handler of INT, TERM and HUP (cli.Main) cancels
// the context of the command that runs with the first it receives.
type Interrupt struct{ Signal syscall.Signal }

func (i *Interrupt) Error() string { return "received " + unix.SignalName(i.Signal) }

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
