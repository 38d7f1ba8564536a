package lockcmd

// Which process an acquire records as the holder, and the warning for a
// holder that is about to exit.
//
// A lock counts as dead once its holder process has exited, so the holder
// must be the process that keeps working under the lock. By default that
// is lockledger's parent: the shell or script that ran it. Run through a
// wrapper that exits with lockledger (timeout 10 lockledger acquire ...,
// sudo, env, or sh -c 'lockledger acquire x; ...'), the parent is the
// wrapper, and the lock is free for the taking the moment the wrapper
// exits. --holder parent records the wrapper's parent instead.
//
// The warning costs a normal acquire one read of /proc/PID/comm: a parent
// known to be such a wrapper is warned about at once. Only a parent that is
// a shell running a -c script (which may end right after lockledger), with
// stderr going anywhere but /dev/null, is watched, for at most a second
// and from a separate process (about a millisecond to start it), since the
// parent cannot exit while lockledger itself still runs: that process
// holds only stderr (its own stdout is /dev/null, so $(lockledger acquire)
// returns at once), and exits when the holder does or after the second.

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/proc"
)

// Holder choices for acquire --holder.
const (
	holderSelf   = "self"
	holderParent = "parent"
	// holderNone: no process holds the lock; its TTL and heartbeats alone
	// keep it (a lock that spans CI steps, each its own shell).
	holderNone = "none"
)

// holderWatch is how long a holder that may be short-lived is watched.
const holderWatch = time.Second

// wrappers run a command as their child and exit when it does.
var wrappers = strings.Fields("timeout sudo doas su runuser env nice nohup ionice chrt taskset stdbuf setsid time strace ltrace " +
	"flock xargs unbuffer chronic systemd-run prlimit setpriv unshare")

// shells may run lockledger from a -c script that ends right after it.
var shells = strings.Fields("sh bash dash zsh ksh mksh ash busybox fish")

// holderPID is the process acquire records as the holder: --pid, or the
// calling process (self) or its parent.
func holderPID(holder string, pid int) (int, error) {
	switch {
	case pid != 0 && holder != "":
		return 0, events.Invalid("--holder", holder, "cannot be combined with --pid (give one of them)")
	case pid != 0:
		return pid, nil
	}
	switch holder {
	case "", holderSelf:
		return os.Getppid(), nil
	case holderNone:
		return 0, nil
	case holderParent:
		up := proc.ReadStat(os.Getppid()).PPID
		if up <= 1 {
			return 0, events.Invalid("--holder", holder, fmt.Sprintf("the calling process (pid %d) has no parent to hold the lock", os.Getppid()))
		}
		return up, nil
	}
	return 0, events.Invalid("--holder", holder, "must be self, parent or none")
}

// runsScript reports whether pid was started as "SHELL ... -c SCRIPT".
func runsScript(pid int) bool {
	args := proc.Args(pid)
	if len(args) == 0 {
		return false
	}
	for _, a := range args[1:] {
		if !strings.HasPrefix(a, "-") || a == "--" {
			return false // the script file or the -c string's arguments
		}
		if !strings.HasPrefix(a, "--") && strings.Contains(a, "c") {
			return true
		}
	}
	return false
}

const holderAdvice = "run acquire with --holder parent (or --pid) when a wrapper runs it; see lockledger acquire --help"

// checkHolder warns when the holder just recorded for lock is a process
// about to exit (see the comment at the top).
func checkHolder(g *invocation.Globals, lock string, pid int) {
	comm := proc.Comm(pid)
	switch {
	case slices.Contains(wrappers, comm):
		// An error line, shown with --quiet too: the lock the caller
		// believes held is free for anyone to take unless it acts.
		g.Log.Error("the holder recorded is a wrapper that exits when lockledger does: the lock will count as dead at once; "+holderAdvice,
			"lock", lock, "holder_pid", pid, "holder", comm)
	case slices.Contains(shells, comm) && runsScript(pid) && !discarded(g.IO.ErrOut):
		if err := spawnWatcher(g, lock, pid, comm); err != nil {
			g.Log.Debug("cannot watch the holder", "err", err)
		}
	}
}

// discarded reports whether w is /dev/null, where a warning would go
// unread (a script's 2>/dev/null): no watcher then.
func discarded(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	var st, null unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil || unix.Stat(os.DevNull, &null) != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == null.Rdev
}

const watchCommand = "__watch-holder"

var watchHolderListing = invocation.Listing{
	Use:    watchCommand,
	Hidden: true,
}

func NewWatchHolder(g *invocation.Globals) *cobra.Command {
	var lock, comm string
	var pid int
	cmd := watchHolderListing.Of(&cobra.Command{
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			exited, err := waitPidfd(3, holderWatch)
			if err != nil || !exited {
				return err
			}
			// An error line for the same reason as checkHolder's.
			g.Log.Error(fmt.Sprintf("the holder recorded exited within %s of the acquire: the lock counts as dead and the next acquire takes it over; %s", holderWatch, holderAdvice),
				"lock", lock, "holder_pid", pid, "holder", comm)
			return nil
		},
	})
	fl := cmd.Flags()
	fl.StringVar(&lock, "lock", "", "")
	fl.StringVar(&comm, "comm", "", "")
	fl.IntVar(&pid, "pid", 0, "")
	return cmd
}
