package lockcmd

import (
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/internal/proc"
)

// terminal is the controlling terminal run gives its command, which runs
// in a process group of its own: the terminal reads and sets its modes
// for its foreground group alone, and stops any other that tries
// (SIGTTIN, SIGTTOU), so a command that asks on it (read, a password
// prompt, an editor) would stop at its first question, and run hold the
// lock for it until killed. flock(1), whose command shares its group,
// never meets this.
type terminal struct {
	f *os.File
	// suspended: run stopped its own group to follow the command's stop,
	// and has not been continued since.
	suspended bool
}

// controllingTerminal is run's controlling terminal when run reads from
// it (in, its standard input, is a terminal), else nil: a run with no
// terminal (cron, CI, a service), or whose input is elsewhere, gives its
// command none. A script's "run ... &" without job control reads
// /dev/null while the script goes on reading the terminal, which its
// foreground must stay for. A run started in the background (a shell's
// "run ... &") has it too, for when it is brought to the foreground.
func controllingTerminal(in any) *terminal {
	if !invocation.IsTerminal(in) {
		return nil
	}
	f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	return &terminal{f: f}
}

// give makes cmd's process group the terminal's foreground as it starts,
// when run's group is the foreground (typed at a shell, or run by a
// script that is); it reports whether it does.
func (t *terminal) give(cmd *exec.Cmd) bool {
	if !t.holds(unix.Getpgrp()) {
		return false
	}
	cmd.SysProcAttr.Foreground, cmd.SysProcAttr.Ctty = true, int(t.f.Fd())
	return true
}

// started is called once the command has started, or failed to, with the
// terminal given to it: run is in the background of the terminal from
// then on, where its own log lines (with tostop) and taking the terminal
// back would stop it. Ignored only from here, so that the command does not
// inherit the ignoring; run starts no other command.
func (t *terminal) started() {
	signal.Ignore(unix.SIGTTOU)
}

// holds says whether process group pgrp is the terminal's foreground.
func (t *terminal) holds(pgrp int) bool {
	fg, err := unix.IoctlGetInt(int(t.f.Fd()), unix.TIOCGPGRP)
	return err == nil && fg == pgrp
}

// hand makes pgrp the terminal's foreground.
func (t *terminal) hand(pgrp int) {
	_ = unix.IoctlSetPointerInt(int(t.f.Fd()), unix.TIOCSPGRP, pgrp)
}

// takeBack makes run's group the foreground again while the command's
// (pgid) is: not from a shell that took it meanwhile (run suspended, then
// continued in the background). It reports whether it did.
func (t *terminal) takeBack(pgid int) bool {
	if !t.holds(pgid) {
		return false
	}
	t.hand(unix.Getpgrp())
	return true
}

// passOn sends the signal of the terminal's keyboard that killed the
// command in its foreground (Ctrl-C, Ctrl-\) to the other processes of
// run's group, which the terminal sent it to before the command's group
// was its foreground: a script that ran run (sh, without job control of
// its own) stops at Ctrl-C, as around flock(1), instead of going on to its
// next command. It returns the signal passed on (0 for none): run itself
// exits with 128+N, as the command did, and dies of SIGINT (see
// runState.interrupted).
func (t *terminal) passOn(ps *os.ProcessState) syscall.Signal {
	sig := killedBy(ps)
	if sig != unix.SIGINT && sig != unix.SIGQUIT {
		return 0
	}
	for _, pid := range proc.Group(unix.Getpgrp()) {
		if pid != os.Getpid() {
			_ = unix.Kill(pid, sig)
		}
	}
	return sig
}

// stoppedWith follows the command's group, pgid, into a stop. Stopped
// with the terminal its own (Ctrl-Z), or while run is in the background
// (continued there by bg, or started there), it takes run along: run takes
// the terminal back and stops its own group as the terminal would have
// stopped it without the command's group, so that its shell sees the job
// stopped and has the terminal; the command goes on only once run's group
// is continued (continued). When run holds the terminal already (a shell
// brought it to the foreground, and the command's read stopped it), or
// its group is orphaned (no shell to continue it: the kernel discards the
// stop) and the command had the terminal, the command has it again and is
// continued at once. A run stopped past its TTL loses its lock, as any paused run does.
func (t *terminal) stoppedWith(pgid int) {
	if t.suspended || proc.ReadStat(pgid).State != "T" {
		return
	}
	// Read first: between run's look at the terminal and its stop, a
	// shell's fg would be missed (run stopped again, "Stopped" shown).
	orphaned := proc.Orphaned(unix.Getpgrp())
	if !t.holds(unix.Getpgrp()) {
		took := t.takeBack(pgid)
		switch {
		case !orphaned:
			// Not continued here: run may go on for a moment after the
			// kill, before its stop, and would hand the terminal on
			// before it was stopped.
			t.suspended = true
			_ = unix.Kill(0, unix.SIGTSTP)
			return
		case !took:
			// In the background, in a group nothing will bring to the
			// foreground (its shell has gone): continued, the command
			// would stop again at once at the terminal, over and over.
			// It stays stopped, as the job of a shell that has gone.
			return
		}
	}
	t.resume(pgid)
}

// continued is called when run receives SIGCONT: its shell continued the
// job (fg, bg), and with it the command, which has the terminal if run has
// it (fg).
func (t *terminal) continued(pgid int) {
	t.suspended = false
	t.resume(pgid)
}

// resume hands the terminal to the command's group if run holds it, and
// continues the group.
func (t *terminal) resume(pgid int) {
	if t.holds(unix.Getpgrp()) {
		t.started() // in the background from here on
		t.hand(pgid)
	}
	_ = unix.Kill(-pgid, unix.SIGCONT)
}

// cancelled says whether the command died of a signal the terminal sends
// its foreground (Ctrl-C, Ctrl-\, a hangup): a cancel, as those signals
// sent to run are, which the terminal now sends the command directly.
func (t *terminal) cancelled(ps *os.ProcessState) bool {
	switch killedBy(ps) {
	case unix.SIGINT, unix.SIGQUIT, unix.SIGHUP:
		return true
	}
	return false
}

func (t *terminal) close() {
	t.f.Close()
}
