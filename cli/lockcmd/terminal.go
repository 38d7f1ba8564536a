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
}

// foregroundTerminal is run's controlling terminal when run reads from it
// (in, its standard input, is a terminal) and is in its foreground (typed
// at a shell, or run by a script that is), else nil: a run in the
// background, with no terminal (cron, CI, a service), or whose input is
// elsewhere gives its command none. A script's "run ... &" without job
// control reads /dev/null while the script goes on reading the terminal,
// which its foreground must stay for.
func foregroundTerminal(in any) *terminal {
	if !invocation.IsTerminal(in) {
		return nil
	}
	f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	t := &terminal{f}
	if !t.holds(unix.Getpgrp()) {
		f.Close()
		return nil
	}
	return t
}

// give makes cmd's process group the terminal's foreground as it starts.
func (t *terminal) give(cmd *exec.Cmd) {
	cmd.SysProcAttr.Foreground, cmd.SysProcAttr.Ctty = true, int(t.f.Fd())
}

// started is called once the command has started, or failed to: run is in
// the background of the terminal from then on, where its own log lines
// (with tostop) and taking the terminal back would stop it. Ignored only
// from here, so that the command does not inherit the ignoring; run starts
// no other command.
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
// continued in the background).
func (t *terminal) takeBack(pgid int) {
	if t.holds(pgid) {
		t.hand(unix.Getpgrp())
	}
}

// stoppedWith follows the command's group, pgid, into a stop. Stopped
// with the terminal its own (Ctrl-Z), or while run is in the background
// (continued there by bg), it takes run along: run takes the terminal back
// and stops its own group as the terminal would have stopped it without
// the command's group, so that its shell sees the job stopped and has the
// terminal. Once run is continued, or when it holds the terminal already
// (a shell that continued it gave it the terminal after it had handed it
// on, and the command's read stopped it), the command has the terminal if
// run has it, and is continued. A run stopped past its TTL loses its lock,
// as any paused run does; in an orphaned group the stop is discarded and
// the command goes on at once.
func (t *terminal) stoppedWith(pgid int) {
	if proc.ReadStat(pgid).State != "T" {
		return
	}
	if !t.holds(unix.Getpgrp()) {
		t.takeBack(pgid)
		_ = unix.Kill(0, unix.SIGTSTP)
	}
	if t.holds(unix.Getpgrp()) {
		t.hand(pgid)
	}
	_ = unix.Kill(-pgid, unix.SIGCONT)
}

// cancelled says whether the command died of a signal the terminal sends
// its foreground (Ctrl-C, Ctrl-\, a hangup): a cancel, as those signals
// sent to run are, which the terminal now sends the command directly.
func (t *terminal) cancelled(ps *os.ProcessState) bool {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return false
	}
	switch ws.Signal() {
	case unix.SIGINT, unix.SIGQUIT, unix.SIGHUP:
		return true
	}
	return false
}

func (t *terminal) close() {
	t.f.Close()
}
