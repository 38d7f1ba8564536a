package lockcmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/proc"
	"github.com/lockledger/lockledger/lease"
	"github.com/lockledger/lockledger/ledger"
)

// DefaultKillGrace is how long run waits between TERM and KILL.
const DefaultKillGrace = 10 * time.Second

type runOptions struct {
	g         *invocation.Globals
	lock      string
	argv      []string
	command   string
	onLost    string
	killGrace string
	supersede bool
	leave     bool
	cmd       *cobra.Command // for its global flags (recordLossLater)
	acquireFlags
}

var runListing = invocation.Listing{
	Use:   "run NAME [flags] [--] CMD [ARGS...]",
	Short: "Hold a lock while a command runs, and exit with its exit code",
}

func NewRun(g *invocation.Globals) *cobra.Command {
	o := &runOptions{g: g}
	cmd := runListing.Of(&cobra.Command{
		Annotations: map[string]string{invocation.ForwardsSignals: "true"},
		Long: `Acquire NAME, run CMD in its own process group with the lock heartbeated
every min(ttl/3, 30s), then release it with the result (success, failure,
or cancelled when run was signalled) and CMD's exit code. --ttl is 45s
unless given (acquire's is 900s): a host that crashes while it holds the
lock, whose pid no other host can probe, frees it 45s after its last
heartbeat.

CMD follows NAME and run's flags; "--" before it is needed only when CMD
starts with "-" (everything after the first word of CMD is CMD's own).
-c 'COMMAND' runs COMMAND through sh -c instead (as flock -c; flock takes
$SHELL, run always sh). flock's -o has no counterpart: no descriptor holds
the lock for CMD to inherit. What CMD leaves running is stopped when it
exits (below), or left running without the lock with --leave-running,
which is what flock -o gives.

CMD sees LOCKLEDGER_LOCK, LOCKLEDGER_REQUEST_ID and LOCKLEDGER_FENCING_TOKEN.
INT, TERM, HUP and QUIT sent to run go to CMD's whole process group
(with a CONT, for a stopped CMD); HUP or INT that run started with
ignored (nohup, a script's "run ... &") stays ignored, by CMD too. With
standard input a terminal and run in its foreground, CMD's group is its
foreground while CMD runs, so that CMD can read from it (a prompt, an
editor): Ctrl-C and Ctrl-\ reach CMD directly (released as cancelled),
and the script that ran run too (run dies of the Ctrl-C, as flock does,
so that a bash script stops), and Ctrl-Z stops CMD and run together,
as one job of the shell. A "run ... &" stops with CMD at CMD's first read
of the terminal, and fg gives CMD the terminal. If run
itself is killed, CMD gets SIGKILL (parent-death signal). If the lock is
lost, --on-lost kill (default) sends TERM to the group, waits --kill-grace,
sends KILL and exits 5; --on-lost warn only logs it and lets CMD run on,
and run exits 5 when CMD ends. The lock is lost when the ledger shows the
holding ended (released by another, stolen, taken over), which run sees
as soon as the lock changes (it watches it) and logs with who ended it,
or when no heartbeat got through before run's own deadline: the send time of the last successful one plus the TTL
minus a margin of ttl/4, on this host's monotonic clock, even while a
heartbeat hangs. Then the grace is at most half the margin, so CMD is gone
before the TTL runs out and anyone else may take the lock. A loss the
ledger could not record then (the database away) is recorded as soon as
it answers again, for up to an hour, by a process run leaves behind; run
itself exits at once.

When CMD exits, what it left running is stopped the same way (TERM, then
KILL after --kill-grace) before the release, so nothing runs on after the
lock is gone: its process group, and the processes that left the group
(setsid, a double fork), whatever their environment: run is their child
subreaper, so they stay below it. Where the kernel refuses a subreaper,
the processes that carry its LOCKLEDGER_REQUEST_ID are stopped instead, and
one that left the group with a cleared environment (env -i) is not found.
Those processes are recorded as job_processes (terminated or killed).
--leave-running stops nothing after CMD exits and records the processes
carrying its LOCKLEDGER_REQUEST_ID as left_running.

--supersede takes the lock from an older run of the same job (recorded as
superseded) and starts CMD only once that job has stopped: the older runner
on this host is told, stops its job within its own --kill-grace and exits;
run waits until that runner is gone and no process carries the older
LOCKLEDGER_REQUEST_ID. After this run's --kill-grace plus 3s (for the older
runner to notice), what is left of the older job, and its runner, is
killed and recorded as job_processes (killed) before CMD starts. When the
older run was itself still waiting for a job it had superseded, that job
is awaited (and killed) the same way, and so on back; a run superseded
while waiting keeps waiting for its own predecessor, then exits 5 without
starting CMD. A holder on another host, another tool's lock, or a holder
that is not a lockledger run cannot be awaited: run says so, notes it in
the steal, and starts CMD.

--force takes over a stale lock; when its holder is a run on this machine
(paused past its TTL, or gone with its job still running), that job gets
TERM and CONT, KILL after --kill-grace, and its run KILL, before CMD
starts (recorded as job_processes).

run exits with CMD's exact code (128+N when CMD died of signal N; killed
by SIGINT itself when CMD died of the terminal's Ctrl-C), 3 (or
--conflict-exit-code's code) or 4 when it never got the lock, 5 when the
lock was lost before CMD ended (CMD stopped, or run on with --on-lost warn,
or ended just before the loss was seen) or before CMD started (the acquire
answered past the lease's deadline: CMD is not started); 127 when CMD does not exist and 126
when it cannot be executed (as a shell), 128+N when signal N ended --wait
before CMD started.

--json: CMD's stdout and stderr pass through untouched (pipe CMD's output
as with flock); once CMD has exited and the lock is released, run writes
one object as the last line of stdout: status (released; lost; or
release_failed when the release could not be recorded), lock_name,
request_id, fencing_token, result (as recorded: success, failure or
cancelled), command_exit_code (null when CMD never started), exit_code
(run's own), waited_seconds and duration_seconds (CMD's run time). When
run ends before CMD runs, stdout has the error object instead (lockledger
help json). For stdout with nothing but the object, send CMD's output
elsewhere: -c 'make >&2'.`,
		Example: `  lockledger run deploy-prod ./deploy.sh --env prod
  lockledger run nightly-etl -w 30m --ttl 2m make etl
  lockledger run -n -E 0 nightly-etl -c 'make etl && make report'   # cron: skip quietly when busy
  lockledger run db-migrate --intent migrate --metadata ticket=OPS-42 -- ./migrate.sh`,
		Args: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			switch {
			case cmd.Flags().Changed("command") && len(args) > 1:
				return &invocation.UsageError{Err: errors.New("run: give either -c 'COMMAND' or CMD [ARGS...], not both")}
			case cmd.Flags().Changed("command") && len(args) == 1 && dash < 0:
				return nil
			case dash == 0 || dash > 1 || len(args) < 2:
				return &invocation.UsageError{Err: errors.New("run: usage is `lockledger run NAME [flags] [--] CMD [ARGS...]` or `lockledger run NAME -c 'COMMAND'` (one lock name, then the command)")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.lock, o.argv, o.cmd = args[0], args[1:], cmd
			if cmd.Flags().Changed("command") {
				o.argv = []string{"sh", "-c", o.command}
			}
			return runRun(cmd.Context(), o)
		},
	})
	o.register(cmd, true, lease.DefaultTTL)
	fl := cmd.Flags()
	fl.StringVarP(&o.command, "command", "c", "", "run COMMAND through sh -c instead of CMD [ARGS...] (as flock -c)")
	fl.StringVar(&o.onLost, "on-lost", "kill", "when the lock is lost: kill (TERM, grace, KILL the command) or warn")
	fl.StringVar(&o.killGrace, "kill-grace", DefaultKillGrace.String(), "time between TERM and KILL")
	fl.BoolVar(&o.leave, "leave-running", false, "when CMD exits, leave what it started running (recorded as left_running) instead of stopping it")
	fl.BoolVar(&o.supersede, "supersede", false, "take the lock from an older run of the same job (recorded as superseded) and start CMD once that job has stopped (killed after --kill-grace)")
	return cmd
}

// runState is what run saw of its child.
type runState struct {
	signalled bool // run forwarded a signal it received
	// interrupted: Ctrl-C at the terminal killed the command in its
	// foreground, and run passed it on to its own group. run dies of it
	// too once released (invocation.ExitError.Signal), as flock(1) would:
	// a run that exited 130 instead would let the shell script or the
	// outer run that ran it (whose group the terminal no longer sent the
	// signal to) go on as if the command had handled it.
	interrupted bool
	lost        bool // the lock was lost and the command was stopped
}

func runRun(ctx context.Context, o *runOptions) error {
	if o.onLost != "kill" && o.onLost != "warn" {
		return events.Invalid("--on-lost", o.onLost, "must be kill or warn")
	}
	grace, err := invocation.ParseDuration("--kill-grace", o.killGrace)
	if err != nil {
		return err
	}
	req, wait, err := o.request(o.lock, os.Getpid())
	if err != nil {
		return err
	}
	req.Intent = cmp.Or(req.Intent, filepath.Base(o.argv[0]))
	path, err := exec.LookPath(o.argv[0])
	if err != nil {
		// Like a shell (127 or 126), and found before the lock is taken (or
		// waited for): nothing taken, nothing recorded.
		code, why := execFailure(o.argv[0], o.argv[0], err)
		return &ExecError{Code: code, Command: o.argv[0], Why: why}
	}

	// SIGUSR1: a newer run superseded us; the lease checks the lock at once.
	pokes := make(chan os.Signal, 1)
	signal.Notify(pokes, unix.SIGUSR1)
	defer signal.Stop(pokes)

	l, wait, err := o.g.OpenWaiting(ctx, wait)
	if err != nil {
		return err
	}
	defer o.g.Finish(l)
	req.Run = true
	opts := []lease.Option{lease.WithWait(wait), lease.WithWaitObserver(waitReporter(o.g, o.lock)), lease.WithKillGrace(grace),
		lease.WithChecks(pokes)}
	if o.supersede {
		if req.Shared {
			return events.Invalid("--supersede", "", "cannot be combined with --shared or --limit")
		}
		if wait > 0 {
			return events.Invalid("--supersede", "", "cannot be combined with --wait")
		}
		opts = append(opts, lease.WithSupersede())
	}
	// A signal (ctx's cause) gives up the wait.
	waitStart := time.Now()
	hold, err := lease.Acquire(ctx, l, req, opts...)
	waited := time.Since(waitStart)
	endWaitLine(o.g)
	if err != nil {
		reportUnrecorded(o.g, o.lock, err)
		return o.conflict(err)
	}
	// From here on the lease and the release outlive a cancelled ctx.
	bg := context.WithoutCancel(ctx)
	o.g.Log.Info("acquired", "lock", o.lock, "fencing_token", hold.FencingToken(), "request_id", hold.RequestID())
	if a := hold.Acquisition(); a.Stolen {
		// The job's log must show whose holding this run ended, as
		// acquire's does: a dead or stale holder's work may be half done.
		o.g.Log.Warn("took over lock", "lock", o.lock, "reason", a.Reason, "previous", a.Previous.RequestID,
			"previous_actor", a.Previous.Actor, "fencing_token", a.FencingToken)
	}
	reportTakenOver(o.g, o.lock, hold.TakenOver())
	report := func(status, result string, code *int, exit int, started time.Time) *invocation.ExitError {
		if o.g.JSON {
			obj := runObject{Status: status, LockName: o.lock, RequestID: hold.RequestID(), FencingToken: hold.FencingToken(),
				Result: result, CommandExitCode: code, ExitCode: exit, WaitedSeconds: secondsMS(waited)}
			if !started.IsZero() {
				obj.DurationSeconds = secondsMS(time.Since(started))
			}
			invocation.WriteJSON(o.g.IO.Out, obj)
		}
		return &invocation.ExitError{Code: exit}
	}
	if interrupted := invocation.Interrupted(ctx); interrupted != 0 {
		// The signal came as the wait ended with the lock: it was sent to
		// give up, so the command does not start.
		_ = hold.Release(bg, lease.Result{Result: events.ResultCancelled})
		o.g.Log.Warn("signalled as the lock was acquired; the command was not started", "lock", o.lock, "signal", interrupted)
		return report("released", events.ResultCancelled, nil, 128+int(interrupted), time.Time{})
	}
	if hold.Err() != nil {
		// Lost before the command could start: the acquire's answer came
		// after the lease's deadline, which counts from when the request
		// was sent (a ledger that kept it waiting). A command started now
		// would run when, by this run's own reckoning, another may hold
		// the lock already.
		_ = hold.Release(bg, lease.Result{Result: events.ResultCancelled}) // refused as lost unless the loss is recorded
		recordLossLater(o.g, o.cmd, hold)
		o.g.Log.Error("lock lost before the command started; it was not started", "lock", o.lock, "err", hold.Err())
		return report("lost", events.ResultCancelled, nil, invocation.ExitNotHolder, time.Time{})
	}
	if o.supersede {
		if code := awaitSuperseded(ctx, o, hold, grace); code == invocation.ExitNotHolder {
			return report("lost", events.ResultCancelled, nil, code, time.Time{})
		} else if code != 0 {
			return report("released", events.ResultCancelled, nil, code, time.Time{})
		}
	}

	started := time.Now()
	code, st, err := supervise(o, path, hold, grace)
	if err != nil {
		c, why := execFailure(o.argv[0], path, err)
		_ = hold.Release(bg, lease.Result{Result: events.ResultFailure, FailureStep: "exec", ExitCode: &c})
		return &ExecError{Code: c, Command: o.argv[0], Why: why}
	}
	if st.lost {
		_ = hold.Release(bg, lease.Result{Result: events.ResultCancelled, ExitCode: &code}) // joins the heartbeat; refused as lost
		recordLossLater(o.g, o.cmd, hold)
		o.g.Log.Error("lock lost; command stopped", "lock", o.lock, "err", hold.Err(), "command_exit", code)
		return report("lost", events.ResultCancelled, &code, invocation.ExitNotHolder, started)
	}
	result := events.ResultSuccess
	switch {
	case st.signalled:
		result = events.ResultCancelled
	case code != 0:
		result = events.ResultFailure
	}
	if err := hold.Release(bg, lease.Result{Result: result, ExitCode: &code}); err != nil {
		switch {
		case errors.Is(err, ledger.ErrLost) || errors.Is(err, ledger.ErrNotHolder):
			// The holding ended before the command did: kept running under
			// --on-lost warn, or ended before the loss was seen. Either way
			// it ran for a while without the lock, which its exit must say.
			recordLossLater(o.g, o.cmd, hold)
			o.g.Log.Error("lock lost before the command ended; it ran to its end without the lock", "lock", o.lock, "err", err,
				"command_exit", code, "on_lost", o.onLost)
			return report("lost", result, &code, invocation.ExitNotHolder, started)
		}
		o.g.Log.Error("release failed", "lock", o.lock, "err", err)
		// A command that succeeded but whose release is not in the ledger
		// exits failing rather than with a silent 0.
		return report("release_failed", result, &code, cmp.Or(code, invocation.ExitFailure), started)
	}
	o.g.Log.Info("released", "lock", o.lock, "result", result, "exit_code", code)
	done := report("released", result, &code, code, started)
	if st.interrupted {
		done.Signal = unix.SIGINT
	}
	return done
}

// awaitSuperseded holds the command back until the job this run took the
// lock from has stopped (see lease.Lease.AwaitSuperseded), so that the two
// never overlap. A signal meanwhile (ctx's cause), or losing the lock,
// ends the run without starting the command: its exit code (0 to start it).
func awaitSuperseded(ctx context.Context, o *runOptions, hold *lease.Lease, grace time.Duration) int {
	sup, err := hold.AwaitSuperseded(ctx, grace)
	got := invocation.Interrupted(ctx)
	ctx = context.WithoutCancel(ctx)
	var earlier []any
	if len(sup.Earlier) > 0 {
		earlier = []any{"earlier_superseded_request_ids", fmt.Sprint(sup.Earlier)}
	}
	switch {
	case got != 0:
		_ = hold.Release(ctx, lease.Result{Result: events.ResultCancelled})
		o.g.Log.Warn("signalled while waiting for the superseded job to stop; the command was not started", "lock", o.lock, "signal", got)
		return 128 + int(got)
	case err != nil:
		_ = hold.Release(ctx, lease.Result{Result: events.ResultCancelled}) // refused as lost
		recordLossLater(o.g, o.cmd, hold)
		o.g.Log.Error("lock lost while waiting for the superseded job to stop; waited for it all the same, the command was not started",
			append([]any{"lock", o.lock, "err", err, "superseded_request_id", sup.RequestID}, earlier...)...)
		return invocation.ExitNotHolder
	case len(sup.Killed) > 0:
		o.g.Log.Warn("the superseded job outlived the grace and was killed", append([]any{"lock", o.lock,
			"superseded_request_id", sup.RequestID, "pids", fmt.Sprint(sup.Killed), "kill_grace", grace}, earlier...)...)
	case sup.NotAwaited != "":
		// The command may run beside the job it superseded: the user must
		// see it, --quiet or not.
		o.g.Log.Error("the superseded job cannot be awaited; starting the command now", append([]any{"lock", o.lock,
			"superseded_request_id", sup.RequestID, "why", sup.NotAwaited}, earlier...)...)
	case sup.RequestID != "":
		o.g.Log.Info("the superseded job has stopped", append([]any{"lock", o.lock, "superseded_request_id", sup.RequestID}, earlier...)...)
	}
	return 0
}

// supervise runs the child and returns its exit code.
func supervise(o *runOptions, path string, hold *lease.Lease, grace time.Duration) (int, runState, error) {
	var st runState
	cmd := exec.Command(path, o.argv[1:]...)
	cmd.Args[0] = o.argv[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = o.g.IO.In, o.g.Stdout(), o.g.IO.ErrOut
	cmd.Env = append(os.Environ(),
		"LOCKLEDGER_LOCK="+hold.Lock(),
		"LOCKLEDGER_REQUEST_ID="+hold.RequestID(),
		"LOCKLEDGER_FENCING_TOKEN="+strconv.FormatInt(hold.FencingToken(), 10))
	cmd.SysProcAttr = commandAttr()

	// Marked before the command starts: its leftovers were all created
	// after this, which lets the scan for them skip older processes.
	mark := proc.MarkForks()
	// A subreaper: what the command leaves running once its parent has
	// exited (a double fork, a setsid daemon) stays below run, where
	// stopLeftovers finds it whatever its environment. Run reaps it.
	below := proc.BelowOnly() // no other process's environment read
	if err := proc.BecomeSubreaper(); err != nil {
		o.g.Log.Debug("cannot become a child subreaper; leftovers are found by their request id only", "err", err)
		below = proc.Descendants()
	}
	orphans := make(chan os.Signal, 1)
	signal.Notify(orphans, unix.SIGCHLD)
	defer signal.Stop(orphans)
	tty := controllingTerminal(o.g.IO.In)
	var conts chan os.Signal // run's job continued (fg, bg)
	given := false
	if tty != nil {
		defer tty.close()
		conts = make(chan os.Signal, 1)
		signal.Notify(conts, unix.SIGCONT)
		defer signal.Stop(conts)
		given = tty.give(cmd)
	}
	exited, err := proc.StartLocked(cmd) // its Pdeathsig sent only when run dies
	if given {
		tty.started()
		if err != nil {
			// The terminal is the command's once it is forked, before
			// its exec failed.
			tty.hand(unix.Getpgrp())
		}
	}
	if err != nil {
		return 0, st, err
	}
	pgid := cmd.Process.Pid
	var killTimer <-chan time.Time
	lost := hold.Lost()
	record := context.Background()
	var code int
	var stopped chan struct{} // closed once what the command left running is stopped
	stopCtx, stopNow := context.WithCancel(context.Background())
	defer stopNow()
	for {
		select {
		case s := <-o.g.Signals:
			if stopped != nil {
				stopNow() // signalled while its leftovers are stopped: KILL them at once
				continue
			}
			st.signalled = true
			_ = unix.Kill(-pgid, s.(syscall.Signal))
			// A stopped command (Ctrl-Z, or at the terminal from the
			// background) gets the signal only once continued, as a
			// shell's kill continues a stopped job.
			_ = unix.Kill(-pgid, unix.SIGCONT)
		case <-orphans:
			proc.ReapExited(pgid) // pgid is the command's pid, which cmd.Wait reaps
			if tty != nil {
				tty.stoppedWith(pgid)
			}
		case <-conts:
			tty.continued(pgid)
		case <-lost:
			lost = nil
			if o.onLost == "warn" {
				o.g.Log.Error("lock lost; command keeps running (--on-lost warn)", "lock", hold.Lock(), "err", hold.Err())
				continue
			}
			st.lost = true
			var expired *lease.DeadlineError
			if errors.As(hold.Err(), &expired) {
				// Lost on this host's clock, ahead of the TTL: the command
				// must be gone within half the margin, before anyone else
				// may take the lock; so must what it left running, and
				// recording that must not wait on an unreachable ledger.
				grace = min(grace, expired.Margin/2)
				var cancel context.CancelFunc
				record, cancel = context.WithDeadline(record, expired.LastOK.Add(expired.TTL-expired.Margin/2))
				defer cancel()
			}
			o.g.Log.Error("lock lost; stopping the command", "lock", hold.Lock(), "err", hold.Err(), "kill_grace", grace)
			_ = unix.Kill(-pgid, unix.SIGTERM)
			killTimer = time.After(grace)
		case <-killTimer:
			_ = unix.Kill(-pgid, unix.SIGKILL)
		case <-exited: // the exit status is in ProcessState
			code = exitCode(cmd.ProcessState)
			lost, killTimer, orphans, conts = nil, nil, nil, nil
			if tty != nil {
				// Run's again, for a signal while the leftovers are stopped.
				if tty.takeBack(pgid) && !st.signalled {
					st.interrupted = tty.passOn(cmd.ProcessState) == unix.SIGINT
				}
				st.signalled = st.signalled || tty.cancelled(cmd.ProcessState)
			}
			stopped = make(chan struct{})
			go func() {
				defer close(stopped)
				stopLeftovers(stopCtx, record, o, hold, pgid, grace, mark, below)
			}()
		case <-stopped:
			return code, st, nil
		}
	}
}

// stopLeftovers ends what the command left running when it exited: its
// process group and the processes below run (it is their subreaper),
// which include those that left the group (setsid, a double fork); where
// run could not become a subreaper, the processes carrying its
// LOCKLEDGER_REQUEST_ID too (below: proc.BelowOnly or proc.Descendants): TERM, then
// KILL after grace (at once when ctx ends: run is signalled meanwhile).
// With --leave-running they are left alone. Either way the processes found
// are recorded as job_processes, before the release, within record's deadline.
func stopLeftovers(ctx, record context.Context, o *runOptions, hold *lease.Lease, pgid int, grace time.Duration, mark proc.ForkMark, below proc.StopOption) {
	id := hold.RequestID()
	p := events.JobProcessesPayload{JobRequestID: id}
	if o.leave {
		p.PIDs = proc.JobPIDs(id)
		p.Action, p.Note = events.JobLeftRunning, "outlived the command; left running (--leave-running), no longer under the lock"
	} else {
		stopped := proc.StopJob(ctx, id, pgid, grace, proc.Since(mark), below)
		p.PIDs, p.Action, p.Note = stopped.PIDs, events.JobTerminated, "outlived the command; stopped with TERM"
		if stopped.Killed {
			p.Action, p.Note = events.JobKilled, fmt.Sprintf("outlived the command; still running %s after TERM, killed", grace)
		}
	}
	if len(p.PIDs) == 0 {
		return
	}
	o.g.Log.Warn("processes of the command outlived it", "lock", hold.Lock(), "pids", fmt.Sprint(p.PIDs), "action", p.Action)
	if err := hold.RecordJobProcesses(record, p); err != nil {
		o.g.Log.Error("could not record the command's leftover processes", "lock", hold.Lock(), "err", err)
	}
}

// execFailure answers as a shell does for a command that cannot be
// started: 127 when there is no such command, 126 when there is one that
// cannot be executed (no execute permission, a directory, not a program, or
// a #! line naming an interpreter that does not exist); and why, naming it.
// path is where name was found.
func execFailure(name, path string, err error) (int, string) {
	var errno syscall.Errno
	switch {
	case errors.Is(err, exec.ErrNotFound):
		return 127, fmt.Sprintf("%s: command not found (not in $PATH)", name)
	case errors.Is(err, fs.ErrNotExist):
		if _, serr := os.Stat(path); serr == nil {
			// The file exists: what execve did not find is its interpreter.
			return 126, fmt.Sprintf("%s: cannot execute: the interpreter on its #! line does not exist", name)
		}
		return 127, fmt.Sprintf("%s: no such file", name)
	case errors.Is(err, fs.ErrPermission):
		if fi, serr := os.Stat(path); serr == nil && fi.IsDir() {
			return 126, fmt.Sprintf("%s: cannot execute: is a directory", name)
		}
		return 126, fmt.Sprintf("%s: cannot execute: permission denied (not an executable file)", name)
	case errors.As(err, &errno):
		return 126, fmt.Sprintf("%s: cannot execute: %v", name, errno)
	}
	return 126, fmt.Sprintf("%s: cannot execute: %v", name, err)
}

func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return 1
	}
	if sig := killedBy(ps); sig != 0 {
		return 128 + int(sig)
	}
	if code := ps.ExitCode(); code >= 0 {
		return code
	}
	return 1
}

// killedBy is the signal that ended the process of ps, 0 when it exited.
func killedBy(ps *os.ProcessState) syscall.Signal {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal()
	}
	return 0
}
