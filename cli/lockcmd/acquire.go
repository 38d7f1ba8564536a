package lockcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/formats"
	"github.com/lockledger/lockledger/internal/outfile"
	"github.com/lockledger/lockledger/lease"
	"github.com/lockledger/lockledger/ledger"
)

// acquireFlags are shared by acquire, steal and run.
type acquireFlags struct {
	ttl, wait     string
	actor         string
	intent        string
	intentVersion string
	requestID     string
	pid           int
	metadata      []string
	force         bool
	reclaim       bool
	files         []string
	maxAge        string
	shared        bool
	limit         int64
	noWait        bool
	conflictCode  int
	flags         *pflag.FlagSet
}

// register adds the flags; ttl is --ttl's default.
func (f *acquireFlags) register(cmd *cobra.Command, withWait bool, ttl time.Duration) {
	fl := cmd.Flags()
	fl.StringVar(&f.ttl, "ttl", strconv.Itoa(int(ttl/time.Second)), "seconds without a heartbeat before the lock is stale (90s, 15m or plain seconds)")
	fl.StringVar(&f.actor, "actor", "", "who acts (default $LOCKLEDGER_ACTOR, else $USER, else the OS user name)")
	fl.StringVar(&f.intent, "intent", "", "what the holder is doing (recorded in the lock file)")
	fl.StringVar(&f.intentVersion, "intent-version", "", "version of the intent")
	fl.StringVar(&f.requestID, "request-id", "", "request id (default req_<ULID>); 1-128 of A-Z a-z 0-9 _ . : -")
	fl.StringArrayVar(&f.metadata, "metadata", nil, "key=value recorded with the lock (repeatable)")
	fl.StringArrayVar(&f.files, "file", nil, "also project the lock as FORMAT:PATH, FORMAT one of "+strings.Join(formats.Names(), ", ")+
		"; PATH must hold nothing, lockledger's own file or a lock of that format, and must not be inside the root (else exit 2) (repeatable)")
	fl.StringVar(&f.maxAge, "max-age", "", "treat a holder older than this as stale (BSO: its zombie age, default 24h)")
	fl.BoolVarP(&f.shared, "shared", "s", false, "take a shared (reader) hold: shared holders coexist and exclude exclusive ones, like flock -s")
	fl.Int64Var(&f.limit, "limit", 0, "take one of at most N shared holds (a semaphore, like consul lock -n); every holder must pass the same N (implies --shared)")
	f.flags = fl
	fl.BoolVar(&f.reclaim, "reclaim", false, "take the lock over from another process holding it under this --request-id (recorded as lock_stolen, reason reclaimed)")
	if withWait {
		fl.StringVarP(&f.wait, "wait", "w", "0", "keep trying this long while the lock is held: seconds (5, 0.5, as flock -w), a duration (90s, 1.5s, 15m), or forever")
		fl.BoolVarP(&f.noWait, "nonblock", "n", false, "do not wait: fail at once when the lock is held (the default; as flock -n)")
		fl.IntVarP(&f.conflictCode, "conflict-exit-code", "E", invocation.ExitBlocked, "exit with this code when an active holder keeps the lock (as flock -E); "+conflictRange)
		fl.BoolVar(&f.force, "force", false, "take over a stale lock (never an active one)")
	}
}

// request builds the ledger request; pid is the holder's process.
func (f *acquireFlags) request(lock string, pid int) (ledger.AcquireRequest, time.Duration, error) {
	ttl, err := invocation.ParseDuration("--ttl", f.ttl)
	if err != nil {
		return ledger.AcquireRequest{}, 0, err
	}
	var wait time.Duration
	if f.flags != nil && f.flags.Lookup("wait") != nil {
		if wait, err = invocation.ParseWait("--wait", f.wait); err != nil {
			return ledger.AcquireRequest{}, 0, err
		}
	}
	if f.noWait && f.flags != nil && f.flags.Changed("wait") {
		return ledger.AcquireRequest{}, 0, events.Invalid("--nonblock", "", "cannot be combined with --wait")
	}
	if err := f.checkConflictCode(); err != nil {
		return ledger.AcquireRequest{}, 0, err
	}
	md, err := invocation.ParseMetadata(f.metadata)
	if err != nil {
		return ledger.AcquireRequest{}, 0, err
	}
	targets, err := ParseTargets(f.files)
	if err != nil {
		return ledger.AcquireRequest{}, 0, err
	}
	if f.flags != nil && f.flags.Changed("limit") && f.limit == 0 {
		// A limit given names its slots: 0 is the request's "none" (--shared).
		return ledger.AcquireRequest{}, 0, events.Invalid("--limit", "0", ledger.LimitRule)
	}
	var maxAge time.Duration
	if f.maxAge != "" {
		if maxAge, err = invocation.ParseDuration("--max-age", f.maxAge); err != nil {
			return ledger.AcquireRequest{}, 0, err
		}
		if maxAge == 0 {
			return ledger.AcquireRequest{}, 0, events.Invalid("--max-age", f.maxAge, "must be positive")
		}
	}
	req := ledger.AcquireRequest{
		Lock:     lock,
		Identity: ledger.Identity{RequestID: f.requestID, Actor: f.actor, PID: pid},
		Intent:   f.intent, IntentVersion: f.intentVersion, TTL: ttl, Metadata: md, Force: f.force, Reclaim: f.reclaim,
		Targets: targets, MaxAge: maxAge, Shared: f.shared || f.limit > 0, Limit: f.limit,
	}
	if err := req.Validate(); err != nil {
		return ledger.AcquireRequest{}, 0, f.flagOf(err)
	}
	return req, wait, nil
}

// flagOf names, in an invalid request's error, the flag the field came
// from, with the value as typed.
func (f *acquireFlags) flagOf(err error) error {
	var inv *events.InvalidError
	if !errors.As(err, &inv) {
		return err
	}
	switch inv.Field {
	case "ttl":
		return events.Invalid("--ttl", f.ttl, inv.Rule)
	case "limit":
		return events.Invalid("--limit", strconv.FormatInt(f.limit, 10), inv.Rule)
	case "file":
		return events.Invalid("--file", f.files[0], inv.Rule)
	case "max age":
		return events.Invalid("--max-age", f.maxAge, inv.Rule)
	}
	return err
}

// ParseTargets turns repeated --file FORMAT:PATH flags into targets with
// absolute paths.
func ParseTargets(specs []string) ([]events.Target, error) {
	var out []events.Target
	for _, s := range specs {
		t, err := formats.ParseTarget(s)
		if err != nil {
			return nil, err // names --file and the rule
		}
		if t.Path, err = filepath.Abs(t.Path); err != nil {
			return nil, events.Invalid("--file", s, err.Error())
		}
		out = append(out, t)
	}
	return out, nil
}

type acquireOptions struct {
	g      *invocation.Globals
	lock   string
	holder string
	// printSecret and secretFile ask for a release secret: printed after
	// the request id (release_secret with --json), or written to a new
	// file (mode 0600, never over an existing one).
	printSecret bool
	secretFile  string
	acquireFlags
}

var acquireListing = invocation.Listing{
	Use:   "acquire NAME",
	Short: "Take a lock and print its request id",
}

func NewAcquire(g *invocation.Globals) *cobra.Command {
	o := &acquireOptions{g: g}
	cmd := acquireListing.Of(&cobra.Command{
		Long: `Take a lock. The holder recorded is the calling process (the shell or
script that runs lockledger; --holder self, the default), its parent
(--holder parent), or --pid: when it exits, the lock counts as dead and
the next acquire takes it over. Print the request id, which heartbeat
and release need.

The trap: run through a wrapper that exits with lockledger, as in
"timeout 10 lockledger acquire NAME", sudo, env, or
sh -c 'lockledger acquire NAME; ...', the calling process is the wrapper,
and the lock is free for anyone the moment the wrapper exits. Use
--holder parent there (the wrapper's parent, e.g. your script), or
--pid. lockledger warns on stderr when the holder is a known wrapper, and
when it is a shell running a -c script that exits within a second of the
acquire (watched from a separate process, for at most that second).

--holder none records no process (pid 0): the lock is held while
heartbeats arrive within --ttl and stale after, whichever process sends
them; heartbeat and release by --request-id work from any process, such as
a later CI step (see docs/ci.md); not with --file.

--print-release-secret or --release-secret-file PATH asks for a release
secret: a random secret (256 bits, URL-safe base64) given to this acquirer
only, printed on the line after the request id (release_secret with
--json) or written to PATH (a new file, mode 0600; an existing PATH is
refused, exit 2, before the lock is taken). The ledger records only its
SHA-256. release --request-id R with that secret (LOCKLEDGER_RELEASE_SECRET,
--secret-file, or --secret) is accepted from any uid, as for a CI step
that runs as another user. Without either flag there is no secret, and
the output is as before.

Exit 3 (or --conflict-exit-code's code) when an active holder has it
(after --wait, if given; --wait forever waits until it is free), 4 when it
is stale and --force was not given. Not waiting is the default (-n says so).
Waiters are served in the order they queued (their first refused attempt):
a free lock with waiters queued is refused with exit 3 to anyone but the
first of them, --wait or not; the message names that first waiter (see
status, and docs/json.md). A waiter's place is a lease of 15 s that it
renews every 5 s while it waits (an acquire_blocked each): a waiter that
died leaves the queue within 15 s, on any host. --force takes a stale
lock whatever the queue (the waiters give up on a stale lock); on a free
lock, or one whose holder is dead, it waits its turn like anyone.

--shared takes a shared (reader) hold: any number of shared holders at
once, none while an exclusive holder has the lock, and no exclusive holder
while a shared one has it (flock -s / flock -x). --limit N makes the lock a
semaphore of N slots (implies --shared; consul lock -n N): every holder
passes the same N while any holds it, else exit 2. Shared holders have no
lock file (NAME.lock is the exclusive holder's); --file is refused with them. Ctrl-C or TERM during --wait gives up
at once, records acquire_blocked, and exits 130 or 143 (128+signal).`,
		Example: `  rid=$(lockledger acquire deploy-prod --ttl 15m --intent deploy)
  lockledger acquire deploy-prod --wait 5m --metadata commit=abc123
  lockledger acquire deploy-prod -w 0.5 -E 75   # flock -w 0.5 -E 75
  lockledger acquire deploy-prod --force      # take over a stale lock
  timeout 10 lockledger acquire deploy-prod --wait 5s --holder parent  # held by this script, not by timeout`,
		Args: invocation.ExactlyOneLock,
		RunE: invocation.OnLock(&o.lock, o.run),
	})
	o.register(cmd, true, ledger.DefaultTTL)
	cmd.Flags().IntVar(&o.pid, "pid", 0, "holder process id (default: see --holder)")
	cmd.Flags().BoolVar(&o.printSecret, "print-release-secret", false, "make a release secret and print it after the request id (release_secret with --json): release --request-id R with it is accepted from any uid")
	cmd.Flags().StringVar(&o.secretFile, "release-secret-file", "", "make a release secret and write it to this new file (mode 0600; never over an existing file)")
	cmd.Flags().StringVar(&o.holder, "holder", "", "holder process: self (the calling process, lockledger's parent; the default), parent (its parent, when a wrapper such as timeout or sudo runs lockledger) or none (no process: held while heartbeats arrive within --ttl, for a lock that spans CI steps)")
	return cmd
}

func (o *acquireOptions) run(ctx context.Context) error {
	if o.conflictCode == 0 {
		return events.Invalid("--conflict-exit-code", "0",
			"must not be 0 for acquire: its caller could not tell a lock held by another from one it took (run takes 0: its command does not run)")
	}
	pid, err := holderPID(o.holder, o.pid)
	if err != nil {
		return err
	}
	req, wait, err := o.request(o.lock, pid)
	if err != nil {
		return err
	}
	req.NoProcess = o.holder == holderNone
	req.ReleaseSecret = o.printSecret || o.secretFile != ""
	secretFile, err := o.createSecretFile()
	if err != nil {
		return err
	}
	if secretFile != nil {
		defer secretFile.Abort()
	}
	l, wait, err := o.g.OpenWaiting(ctx, wait)
	if err != nil {
		return err
	}
	defer o.g.Finish(l)
	a, err := lease.Wait(ctx, l, req, wait, waitReporter(o.g, o.lock))
	endWaitLine(o.g)
	if err != nil {
		reportUnrecorded(o.g, o.lock, err)
		return o.conflict(err)
	}
	if req.ReleaseSecret && a.ReleaseSecret == "" {
		o.g.Log.Warn("no release secret: the request held the lock already, and the secret of its acquisition is not kept",
			"lock", o.lock)
	}
	if secretFile != nil && a.ReleaseSecret != "" {
		if err := o.writeSecretFile(secretFile, a.ReleaseSecret); err != nil {
			return err
		}
	}
	// The request id is the grant: not printed before the stale holder's job is gone.
	reportTakenOver(o.g, o.lock, lease.StopTakenOver(ctx, l, a, takeOverGrace(req.TTL)))
	if !o.printSecret {
		a.ReleaseSecret = ""
	}
	printAcquisition(o.g, a)
	if req.NoProcess {
		o.g.Log.Info("no process holds the lock: heartbeat it within its TTL (--request-id) or it goes stale", "lock", o.lock,
			"ttl_seconds", a.Record.TTLSeconds)
	} else if o.pid == 0 {
		checkHolder(o.g, o.lock, pid)
	}
	return nil
}

// createSecretFile starts --release-secret-file's new file, before the
// lock is taken, so that a path refused leaves the ledger unchanged; nil
// without the flag.
func (o *acquireOptions) createSecretFile() (*outfile.File, error) {
	if o.secretFile == "" {
		return nil, nil
	}
	const flag = "--release-secret-file"
	if _, err := os.Lstat(o.secretFile); err == nil {
		return nil, events.Invalid(flag, o.secretFile, "already exists: acquire never overwrites a file (a secret is written to a new one)")
	}
	return o.g.CreateOutput(flag, o.secretFile, outfile.NoReplace())
}

// writeSecretFile puts the release secret in its file. A failure leaves
// the lock held (the uid that acquired it releases it) and says so.
func (o *acquireOptions) writeSecretFile(f *outfile.File, secret string) error {
	const flag = "--release-secret-file"
	_, err := io.WriteString(f, secret+"\n")
	if err == nil {
		err = o.g.CommitOutput(flag, f)
	}
	if errors.Is(err, fs.ErrExist) {
		err = events.Invalid(flag, o.secretFile, "already exists: acquire never overwrites a file (a secret is written to a new one)")
	}
	if err != nil {
		o.g.Log.Error("the lock is held, but its release secret was not written: release it with its request id from this uid",
			"lock", o.lock)
	}
	return err
}

func printAcquisition(g *invocation.Globals, a *ledger.Acquisition) {
	_ = g.Answer(acquisitionObject(a), true, func(w io.Writer) {
		fmt.Fprintln(w, a.RequestID)
		if a.ReleaseSecret != "" {
			fmt.Fprintln(w, a.ReleaseSecret)
		}
		switch {
		case a.Already:
			g.Log.Info("already held by this request", "lock", a.Lock, "fencing_token", a.FencingToken)
		case a.Stolen:
			g.Log.Warn("took over lock", "lock", a.Lock, "reason", a.Reason, "previous", a.Previous.RequestID,
				"previous_actor", a.Previous.Actor, "fencing_token", a.FencingToken)
		case a.Mode == events.ModeShared && a.Limit == 0:
			g.Log.Info("acquired shared", "lock", a.Lock, "fencing_token", a.FencingToken, "limit", "unlimited")
		case a.Mode == events.ModeShared:
			g.Log.Info("acquired shared", "lock", a.Lock, "fencing_token", a.FencingToken, "limit", a.Limit)
		default:
			g.Log.Info("acquired", "lock", a.Lock, "fencing_token", a.FencingToken)
		}
	})
}
