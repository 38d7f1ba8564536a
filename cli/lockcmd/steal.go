package lockcmd

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/lease"
	"github.com/lockledger/lockledger/ledger"
)

// ConfirmTimeout is how long steal --active waits for a yes on a terminal.
const ConfirmTimeout = 30 * time.Second

type stealOptions struct {
	g      *invocation.Globals
	lock   string
	reason string
	active bool
	yes    bool
	acquireFlags
}

var stealListing = invocation.Listing{
	Use:   "steal NAME --reason TEXT [--active] [--yes]",
	Short: "Take a lock over explicitly, with a recorded reason",
}

func NewSteal(g *invocation.Globals) *cobra.Command {
	o := &stealOptions{g: g}
	cmd := stealListing.Of(&cobra.Command{
		Long: `Take a lock from its holder and record lock_stolen with the previous lock,
its hash and your reason. A stale or dead holder is taken over as is; an
active holder only with --active (the escape hatch), which asks for
confirmation on a terminal (30 s, default No) and needs --yes otherwise.
Without --active, an active holder is refused with exit 3 and the refusal
is recorded as action_refused.`,
		Example: `  lockledger steal deploy-prod --reason "runner host lost, job is gone"
  lockledger steal deploy-prod --active --reason "INC-123: hung deploy" --yes`,
		Args: invocation.ExactlyOneLock,
		RunE: invocation.OnLock(&o.lock, o.run),
	})
	o.register(cmd, false, ledger.DefaultTTL)
	fl := cmd.Flags()
	fl.StringVar(&o.reason, "reason", "", "why (required; recorded with the steal)")
	fl.BoolVar(&o.active, "active", false, "allow taking a lock whose holder is active: its process alive, or (no process, --holder none) heartbeating within its TTL")
	fl.BoolVar(&o.yes, "yes", false, "do not ask for confirmation")
	fl.IntVar(&o.pid, "pid", 0, "new holder process id (default: the calling process)")
	return cmd
}

func (o *stealOptions) run(ctx context.Context) error {
	if strings.TrimSpace(o.reason) == "" {
		return events.Invalid("--reason", o.reason, "is required: say why the lock is taken over")
	}
	req, _, err := o.request(o.lock, cmp.Or(o.pid, os.Getppid()))
	if err != nil {
		return err
	}
	l, err := openAsking(ctx, o.g, o.lock, o.active && !o.yes, "steal", "--active", func(s *ledger.LockStatus) string {
		if h := s.Holder; s.State == events.StateHeld {
			return termtext.Sprintf("Lock %s is held by %s (%s, pid %d on %s) and heartbeating.\nTake it over anyway?",
				s.Name, h.Actor, h.RequestID, h.PID, h.HostID)
		}
		return ""
	}, "not taking it over")
	if err != nil {
		return err
	}
	defer o.g.Finish(l)
	a, err := l.Steal(ctx, ledger.StealRequest{AcquireRequest: req, Note: o.reason, Active: o.active})
	if err != nil {
		return err
	}
	reportTakenOver(o.g, o.lock, lease.StopTakenOver(ctx, l, a, takeOverGrace(req.TTL)))
	printAcquisition(o.g, a)
	return nil
}

// openAsking opens the ledger for command's write; when ask, only after a
// yes on the terminal (flag asks for one; off a terminal, --yes is needed)
// to the question about the lock's status (already escaped; "" asks
// nothing).
func openAsking(ctx context.Context, g *invocation.Globals, lock string, ask bool, command, flag string,
	question func(*ledger.LockStatus) string, no string) (*ledger.Ledger, error) {
	if ask && !invocation.IsTerminal(g.IO.In) {
		return nil, events.Invalid("--yes", "", "is required with "+flag+" when standard input is not a terminal")
	}
	l, err := g.Open(ctx, invocation.Writes)
	if err != nil || !ask {
		return l, err
	}
	s, err := l.Status(ctx, lock)
	if err == nil {
		if q := question(s); q != "" {
			var yes bool
			if yes, err = confirm(ctx, g, q, no); err == nil && !yes {
				err = errors.New(command + " cancelled: not confirmed")
			}
		}
	}
	if err != nil {
		g.Finish(l)
		return nil, err
	}
	return l, nil
}

// confirm asks question (already escaped) on the terminal, default No, for
// at most ConfirmTimeout; no says what not answering yes means. A signal
// (ctx's end) ends the question as it ends any wait for input.
func confirm(ctx context.Context, g *invocation.Globals, question, no string) (bool, error) {
	fmt.Fprintf(g.IO.ErrOut, "%s [y/N] (%s) ", question, ConfirmTimeout)
	ask, cancel := context.WithTimeoutCause(ctx, ConfirmTimeout, errNoAnswer)
	defer cancel()
	line, err := bufio.NewReader(g.Stdin(ask)).ReadString('\n')
	switch {
	case ctx.Err() != nil:
		return false, context.Cause(ctx)
	case errors.Is(err, errNoAnswer):
		fmt.Fprintln(g.IO.ErrOut, "\nno answer: "+no)
		return false, nil
	}
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes", nil
}

// errNoAnswer ends a question no one answered within ConfirmTimeout.
var errNoAnswer = errors.New("no answer")
