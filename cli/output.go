package cli

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/cli/lockcmd"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/fence"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/store"
)

// errorObject is the --json form of an error: tower-fleet's lock_blocked
// and lock_stale objects, and the same shape for the other failures; its
// "error" is one of ErrorKinds.
func errorObject(err error) map[string]any {
	var ie *invocation.Interrupt
	if errors.As(err, &ie) {
		o := map[string]any{"error": KindInterrupted, "signal": unix.SignalName(ie.Signal), "message": err.Error()}
		if ie.Err != nil {
			o["cause"] = errorObject(ie.Err)
		}
		return o
	}
	var held *ledger.HeldError
	var stale *ledger.StaleError
	var nh *ledger.NotHolderError
	var inv *events.InvalidError
	var broken *ledger.BrokenChainError
	var none *store.NoLedgerError
	var xe *lockcmd.ExecError
	var fenced *fence.StaleError
	switch {
	case errors.As(err, &fenced):
		return map[string]any{"error": KindFenceRejected, "fence": fenced.Fence, "resource": fenced.Resource, "stale_token": fenced.Token,
			"current_token": fenced.Current, "message": err.Error(),
			"suggestion": "a later holding of the lock has written here: this job's lock is gone; stop, do not retry with the same token"}
	case errors.As(err, &xe):
		return map[string]any{"error": execKind(xe), "command": xe.Command, "message": err.Error()}
	case errors.Is(err, ledger.ErrCommitUnknown):
		return map[string]any{"error": KindCommitUnknown, "message": err.Error(),
			"suggestion": "lockledger status or lockledger history shows whether the action is recorded; try it again only if it is not"}
	case errors.Is(err, ledger.ErrNoLedger):
		o := map[string]any{"error": KindNoLedger, "message": err.Error(),
			"suggestion": "name the ledger's root with --root or LOCKLEDGER_ROOT (its database with --database); lockledger init creates a ledger"}
		if errors.As(err, &none) {
			o["where"] = none.Where
		}
		return o
	case errors.As(err, &broken):
		o := map[string]any{"error": KindBrokenChain, "first_bad": broken.FirstBad, "problem_count": broken.Problems,
			"message":    err.Error(),
			"suggestion": "lockledger verify shows the damage; lockledger project --accept-broken-chain projects anyway and records what it changes"}
		if broken.Recorded > 0 {
			o["run_recorded"] = broken.Recorded
		}
		return o
	case errors.As(err, &held):
		o := map[string]any{"error": KindLockBlocked, "lock_name": held.Lock, "held_by": events.HolderOf(held.Holder),
			"message":    err.Error(),
			"suggestion": "Wait for completion (--wait D), or if it must stop now: lockledger steal " + held.Lock + " --active --reason TEXT"}
		if held.Foreign {
			o["foreign"] = true
		}
		if held.Corrupt != nil {
			o["held_by"], o["corrupt"] = nil, held.Corrupt
			o["suggestion"] = "lockledger project moves the unreadable file aside (kept beside it and recorded); or lockledger steal " +
				held.Lock + " --active --reason TEXT"
		}
		if len(held.Queue) > 0 {
			o["held_by"], o["queue_ahead"] = nil, len(held.Queue)
			o["suggestion"] = "Wait for your turn (--wait D): waiters are served in the order they queued"
		}
		if held.Waited > 0 {
			o["waited_seconds"] = held.Waited.Seconds()
		}
		return o
	case errors.As(err, &stale):
		return map[string]any{"error": KindLockStale, "lock_name": stale.Lock,
			"stale_since": events.FormatLockTime(stale.StaleSince), "age_seconds": int64(stale.Age / time.Second),
			"ttl_seconds": stale.Holder.TTLSeconds, "held_by": events.HolderOf(stale.Holder), "message": err.Error(),
			"suggestion": "Use --force to acquire (the stale lock will be recorded as stolen)"}
	case errors.As(err, &nh):
		kind := KindNotHolder
		if nh.Lost {
			kind = KindLockLost
		}
		o := map[string]any{"error": kind, "lock_name": nh.Lock, "request_id": nh.RequestID, "held_by": nil,
			"message": err.Error()}
		if nh.Corrupt != nil {
			o["corrupt"] = nh.Corrupt
		} else if nh.Holder != nil {
			o["held_by"] = events.HolderOf(*nh.Holder)
		}
		if nh.ReleasedSeq > 0 {
			o["released_seq"] = nh.ReleasedSeq
		}
		if nh.Denied != "" {
			o["denied"] = nh.Denied
			o["suggestion"] = "lockledger release " + nh.Lock + " --force --request-id " + nh.RequestID + " --reason TEXT"
		}
		return o
	case errors.As(err, &inv):
		return map[string]any{"error": KindInvalidInput, "field": inv.Field, "value": inv.Value, "rule": inv.Rule,
			"message": err.Error()}
	case ExitCode(err) == invocation.ExitUsage:
		return map[string]any{"error": KindInvalidInput, "message": err.Error()}
	}
	return map[string]any{"error": KindFailure, "message": err.Error()}
}

// execKind is the error kind of a command run could not execute.
func execKind(e *lockcmd.ExecError) string {
	if e.Code == ExitCommandNotFound {
		return KindCommandNotFound
	}
	return KindCannotExecute
}
