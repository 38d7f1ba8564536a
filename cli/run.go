package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/ledger"
)

// DefaultKillGrace is how long run waits between TERM and KILL.
const DefaultKillGrace = 10 * time.Second

type runOptions struct {
	g         *globals
	lock      string
	argv      []string
	onLost    string
	killGrace string
	supersede bool
	acquireFlags
}

func newRun(g *globals) *cobra.Command {
	o := &runOptions{g: g}
	cmd := &cobra.Command{
		Use:   "run NAME [flags] -- CMD [ARGS...]",
		Short: "Hold a lock while a command runs, and exit with its exit code",
		Long: `Acquire NAME, run CMD in its own process group with the lock heartbeated
every min(ttl/3, 30s), then release it with the result (success, failure,
or cancelled when run was signalled) and CMD's exit code.

CMD sees LOCKLEDGER_LOCK, LOCKLEDGER_REQUEST_ID and LOCKLEDGER_FENCING_TOKEN.
INT, TERM, HUP and QUIT sent to run go to CMD's whole process group. If run
itself is killed, CMD gets SIGKILL (parent-death signal). If the lock is
lost (another holder took it, or no heartbeat succeeded within the TTL),
--on-lost kill (default) sends TERM to the group, waits --kill-grace, sends
KILL and exits 5; --on-lost warn only logs it. Processes CMD left running
in its group when it exits are stopped the same way before the release, so
nothing runs on after the lock is gone.

run exits with CMD's exact code (128+N when CMD died of signal N), 3 or 4
when it never got the lock, 5 when the lock was lost and CMD was stopped;
127 when CMD does not exist and 126 when it cannot be executed (as a
shell), 128+N when signal N ended --wait before CMD started.`,
		Example: `  lockledger run deploy-prod -- ./deploy.sh --env prod
  lockledger run nightly-etl --wait 30m --ttl 2m -- make etl
  lockledger run db-migrate --intent migrate --metadata ticket=OPS-42 -- ./migrate.sh`,
		Args: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			if dash != 1 || len(args) < 2 {
				return &usageError{errors.New("run: usage is `lockledger run NAME [flags] -- CMD [ARGS...]` (one lock name, then -- and the command)")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.lock, o.argv = args[0], args[1:]
			return runRun(cmd.Context(), o)
		},
	}
	o.register(cmd, true)
	fl := cmd.Flags()
	fl.StringVar(&o.onLost, "on-lost", "kill", "when the lock is lost: kill (TERM, grace, KILL the command) or warn")
	fl.StringVar(&o.killGrace, "kill-grace", DefaultKillGrace.String(), "time between TERM and KILL")
	fl.BoolVar(&o.supersede, "supersede", false, "take the lock from an older run of the same job (recorded as superseded); a runner on this host is told and stops its job")
	return cmd
}

// runState is what run saw of its child.
type runState struct {
	signalled bool // run forwarded a signal it received
	lost      bool // the lock was lost and the command was stopped
}

func runRun(ctx context.Context, o *runOptions) error {
	if err := events.ValidateLockName(o.lock); err != nil {
		return err
	}
	if o.onLost != "kill" && o.onLost != "warn" {
		return events.Invalid("--on-lost", o.onLost, "must be kill or warn")
	}
	grace, err := ParseDuration("--kill-grace", o.killGrace)
	if err != nil {
		return err
	}
	req, wait, err := o.request(o.lock, os.Getpid())
	if err != nil {
		return err
	}
	if o.intent == "" {
		req.Intent = filepath.Base(o.argv[0])
	}
	path, err := exec.LookPath(o.argv[0])
	if err != nil {
		// Like a shell (127 or 126), and found before the lock is taken (or
		// waited for): nothing taken, nothing recorded.
		code, why := execFailure(o.argv[0], o.argv[0], err)
		fmt.Fprintf(o.g.io.ErrOut, "lockledger: run: %s\n", why)
		return &ExitError{Code: code}
	}

	// Signals that arrive from here on are ours to forward, not to die of.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT)
	defer signal.Stop(sigs)
	// SIGUSR1: a newer run superseded us; check the lock now.
	pokes := make(chan os.Signal, 1)
	signal.Notify(pokes, unix.SIGUSR1)
	defer signal.Stop(pokes)

	l, wait, err := o.g.openWaiting(ctx, wait)
	if err != nil {
		return err
	}
	defer o.g.finish(l)
	opts := []ledger.LeaseOption{ledger.WithTTL(req.TTL), ledger.WithPID(req.PID), ledger.WithIntent(req.Intent, req.IntentVersion),
		ledger.WithMetadata(req.Metadata), ledger.WithWait(wait), ledger.WithWaitObserver(waitReporter(o.g, o.lock))}
	if req.RequestID != "" {
		opts = append(opts, ledger.WithRequestID(req.RequestID))
	}
	if req.Actor != "" {
		opts = append(opts, ledger.WithActor(req.Actor))
	}
	if req.Force {
		opts = append(opts, ledger.WithForce())
	}
	if o.supersede {
		if wait > 0 {
			return events.Invalid("--supersede", "", "cannot be combined with --wait")
		}
		opts = append(opts, ledger.WithSupersede())
	}
	if len(req.Targets) > 0 || req.MaxAge > 0 {
		opts = append(opts, ledger.WithTargets(req.Targets...), ledger.WithMaxAge(req.MaxAge))
	}
	waitCtx, cancelWait := context.WithCancel(ctx)
	var waiting sync.WaitGroup
	waiting.Add(1)
	go func() { // a signal while waiting gives up the wait
		defer waiting.Done()
		select {
		case <-sigs:
			cancelWait()
		case <-waitCtx.Done():
		}
	}()
	lease, err := l.Acquire(waitCtx, o.lock, opts...)
	cancelWait()
	waiting.Wait()
	endWaitLine(o.g)
	if err != nil {
		return err
	}
	// From here on the lease and the release outlive a cancelled ctx.
	bg := context.WithoutCancel(ctx)
	o.g.log.Info("acquired", "lock", o.lock, "fencing_token", lease.FencingToken(), "request_id", lease.RequestID())

	code, st, err := supervise(o, path, lease, sigs, pokes, grace)
	if err != nil {
		c, why := execFailure(o.argv[0], path, err)
		_ = lease.Release(bg, ledger.Result{Result: events.ResultFailure, FailureStep: "exec", ExitCode: &c})
		fmt.Fprintf(o.g.io.ErrOut, "lockledger: run: %s\n", why)
		return &ExitError{Code: c}
	}
	if st.lost {
		_ = lease.Release(bg, ledger.Result{Result: events.ResultCancelled, ExitCode: &code}) // joins the heartbeat; refused as lost
		o.g.log.Error("lock lost; command stopped", "lock", o.lock, "err", lease.Err(), "command_exit", code)
		return &ExitError{Code: ExitNotHolder}
	}
	result := events.ResultSuccess
	switch {
	case st.signalled:
		result = events.ResultCancelled
	case code != 0:
		result = events.ResultFailure
	}
	if err := lease.Release(bg, ledger.Result{Result: result, ExitCode: &code}); err != nil {
		o.g.log.Error("release failed", "lock", o.lock, "err", err)
		switch {
		case errors.Is(err, ledger.ErrLost) || errors.Is(err, ledger.ErrNotHolder):
			o.g.log.Warn("the command ran to the end without the lock (--on-lost warn)", "lock", o.lock)
		case code == 0:
			// The command succeeded but its release is not in the ledger:
			// say so with a failing exit rather than a silent 0.
			return &ExitError{Code: ExitFailure}
		}
	} else {
		o.g.log.Info("released", "lock", o.lock, "result", result, "exit_code", code)
	}
	return &ExitError{Code: code}
}

// supervise runs the child and returns its exit code.
func supervise(o *runOptions, path string, lease *ledger.Lease, sigs, pokes <-chan os.Signal, grace time.Duration) (int, runState, error) {
	var st runState
	cmd := exec.Command(path, o.argv[1:]...)
	cmd.Args[0] = o.argv[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = o.g.io.In, o.g.io.Out, o.g.io.ErrOut
	cmd.Env = append(os.Environ(),
		"LOCKLEDGER_LOCK="+lease.Lock(),
		"LOCKLEDGER_REQUEST_ID="+lease.RequestID(),
		"LOCKLEDGER_FENCING_TOKEN="+strconv.FormatInt(lease.FencingToken(), 10))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}

	// Pdeathsig fires when the thread that forked the child exits, so the
	// child is started and waited for on one locked OS thread.
	started := make(chan error, 1)
	exited := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return 0, st, err
	}
	pgid := cmd.Process.Pid
	var killTimer <-chan time.Time
	lost := lease.Lost()
	for {
		select {
		case s := <-sigs:
			st.signalled = true
			_ = unix.Kill(-pgid, s.(syscall.Signal))
		case <-pokes:
			lease.CheckNow()
		case <-lost:
			lost = nil
			if o.onLost == "warn" {
				o.g.log.Error("lock lost; command keeps running (--on-lost warn)", "lock", lease.Lock(), "err", lease.Err())
				continue
			}
			st.lost = true
			o.g.log.Error("lock lost; stopping the command", "lock", lease.Lock(), "err", lease.Err(), "kill_grace", grace)
			_ = unix.Kill(-pgid, unix.SIGTERM)
			killTimer = time.After(grace)
		case <-killTimer:
			_ = unix.Kill(-pgid, unix.SIGKILL)
		case <-exited: // the exit status is in ProcessState
			code := exitCode(cmd.ProcessState)
			stopGroup(pgid, grace, sigs)
			return code, st, nil
		}
	}
}

// stopGroup ends what the command left running in its process group: TERM,
// then KILL after grace.
func stopGroup(pgid int, grace time.Duration, sigs <-chan os.Signal) {
	if unix.Kill(-pgid, 0) != nil {
		return // nobody left
	}
	_ = unix.Kill(-pgid, unix.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if unix.Kill(-pgid, 0) != nil {
			return
		}
		select {
		case s := <-sigs:
			_ = unix.Kill(-pgid, s.(syscall.Signal))
		case <-time.After(20 * time.Millisecond):
		}
	}
	_ = unix.Kill(-pgid, unix.SIGKILL)
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
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	if code := ps.ExitCode(); code >= 0 {
		return code
	}
	return 1
}
