package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/lockledger/lockledger/internal/lockfile"
)

// A host pins the ledger it writes to (lockfile.Pin, ROOT/ledger.pin): its
// id and the newest head it has seen. A writer refuses a database that
// holds another ledger, an older state of this one (a head below the one
// seen, as a restored backup has) or another history of it (another event
// at the seq seen): its fencing tokens would go backwards. The pin is
// checked at open and advanced at close, so that no write pays for it.

// ErrRolledBack: the database holds another ledger than the one this host
// has written to, or an older state of it.
var ErrRolledBack = errors.New("the database holds another ledger than this host has written to, or an older state of it")

// PinPolicy is what an open does with the root's pin; of two, the
// greater wins.
type PinPolicy int

const (
	// PinCheck refuses a ledger the pin does not allow (RolledBackError).
	PinCheck PinPolicy = iota
	// PinAccept takes the ledger found in the pin's place, and reports the
	// pin it overrode, to be recorded; the pin is written at close, once
	// that is recorded (KeepPin's caller knows).
	PinAccept
	// PinSkip leaves the pin unchecked, and advances it at close: the open
	// is the target of an import.
	PinSkip
	// PinNone neither checks nor keeps the pin: a reader.
	PinNone
)

// RolledBackError names the ledger the root's pin records and the one the
// database holds. It wraps ErrRolledBack.
type RolledBackError struct {
	Where, Pin    string
	Pinned, Found lockfile.Pin
	Reason        string
}

func (e *RolledBackError) Error() string {
	return fmt.Sprintf("ledger: %s holds %s, but this host has written to %s (%s): %s; refusing to write there (%s). %s",
		e.Where, e.Found, e.Pinned, e.Pin, e.Reason, e.danger(), e.Advice())
}

func (e *RolledBackError) Unwrap() error { return ErrRolledBack }

// Other reports whether the database holds another ledger than the one
// pinned, rather than an older state or another history of it.
func (e *RolledBackError) Other() bool { return e.Found.LedgerID != e.Pinned.LedgerID }

// danger is what a write there would do.
func (e *RolledBackError) danger() string {
	if e.Other() {
		return "this root's lock files and pin are that ledger's, and a root serves one ledger"
	}
	return "fencing tokens could go backwards"
}

// Advice is what to do. Another ledger is no rollback to accept: the root
// is the wrong one for it (or the database the wrong one for the root).
func (e *RolledBackError) Advice() string {
	if e.Other() {
		return fmt.Sprintf("Point --database or --root back at ledger %s, or give this database a root of its own (--root DIR or LOCKLEDGER_ROOT)",
			e.Pinned.LedgerID)
	}
	return "Point --database or --root back at that ledger, or, to go on from this state, run `lockledger project --accept-rollback` (recorded)"
}

// Behind is e in a reader's words: it reads on, so what it shows is not
// what this host saw.
func (e *RolledBackError) Behind() string {
	return fmt.Sprintf("%s holds %s, but this host has written to %s (%s): %s. What is read here is not what this host saw: "+
		"a lock file here that the ledger does not hold may be %s. %s",
		e.Where, e.Found, e.Pinned, e.Pin, e.Reason, e.Theirs(), e.Advice())
}

// Theirs says whose a lock file here that the ledger found does not hold
// may be.
func (e *RolledBackError) Theirs() string {
	if e.Other() {
		return "a holder of the ledger this host wrote to (this root served another ledger)"
	}
	return "its own holder from the events it no longer has (this root saw the ledger further on)"
}

// CheckPin compares the ledger id with the store's events against the
// root's pin, by policy. It returns the pin as it now stands (zero where
// there is none yet), to be advanced at close (KeepPin), the one it
// overrode under PinAccept, and the seq of the head it read (-1 when it
// read none).
func CheckPin(ctx context.Context, s Store, files *lockfile.Dir, where, id string, policy PinPolicy) (now, overrode *lockfile.Pin, seq int64, err error) {
	if policy == PinNone {
		return nil, nil, -1, nil
	}
	pin, ok, err := files.ReadPin()
	if err != nil || policy == PinSkip {
		return &pin, nil, -1, err
	}
	head, refused, err := comparePin(ctx, s, files, where, id, pin, ok)
	if err != nil {
		return nil, nil, -1, err
	}
	if refused != nil && policy != PinAccept {
		return nil, nil, -1, refused
	}
	if refused == nil {
		return &pin, nil, head.Seq, nil // advanced at close
	}
	// Accepted: the root pins the head found once the acceptance is
	// recorded, at close (KeepPin); a run that records nothing leaves the
	// pin as it was, and the next writer refuses the ledger still.
	return &head, &pin, head.Seq, nil
}

// LookPin is a reader's look at the root's pin: the RolledBackError a
// writer would be refused with (nil: none), so that a reader can say that
// what it shows is not what this host saw. It changes nothing. A pin the
// reader cannot read (another user's root), or a head it cannot read, is
// none: readers are not refused, and the reads that follow meet a
// database that fails.
func LookPin(ctx context.Context, s Store, files *lockfile.Dir, where, id string) *RolledBackError {
	pin, ok, err := files.ReadPin()
	if err != nil || !ok {
		return nil
	}
	_, found, err := comparePin(ctx, s, files, where, id, pin, true)
	if err != nil {
		return nil
	}
	return found
}

// comparePin reads the store's head and tells why pin (ok: there is one)
// does not allow it: a RolledBackError, or nil.
func comparePin(ctx context.Context, s Store, files *lockfile.Dir, where, id string, pin lockfile.Pin, ok bool) (lockfile.Pin, *RolledBackError, error) {
	head, at, pruned, err := pinHead(ctx, s, id, pin.Seq)
	if err != nil {
		return head, nil, fmt.Errorf("ledger: the head to check against %s: %w", files.Root(), err)
	}
	reason := ""
	switch {
	case !ok:
	case pin.LedgerID != id:
		reason = "another ledger"
	case head.Seq < pin.Seq:
		reason = fmt.Sprintf("an older state of it (head seq %d, below seq %d seen: restored from a backup or rolled back)", head.Seq, pin.Seq)
	case pin.Seq > 0 && !pruned && at != pin.Hash:
		reason = fmt.Sprintf("another history of it (its event at seq %d is not the one seen: restored from a backup or rolled back, then written to)", pin.Seq)
	}
	if reason == "" {
		return head, nil, nil
	}
	return head, &RolledBackError{Where: where, Pin: filepath.Join(files.Root(), lockfile.PinName), Pinned: pin, Found: head, Reason: reason}, nil
}

// KeepPin advances the root's pin to the store's head at close, where it
// moved on from pin (nil: the open pins nothing; overrode: the pin a
// PinAccept open took the head found in place of). A failure is logged:
// the pin stays at a head this host has seen. A head that does not extend
// the pin (the database restored or rolled back while the process had it
// open) is not written over it: the next open refuses that ledger, as it
// would have had the process not been running.
//
// The head is read and the pin compared and written under the pin's lock
// (lockfile.Dir.LockPin), against the pin as it stands then: another
// process of this host may have advanced it meanwhile, and a head read
// before that process's, or one of a database restored since, must not
// take its place.
func KeepPin(s Store, files *lockfile.Dir, id string, pin, overrode *lockfile.Pin, log *slog.Logger) {
	if pin == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond) // a lost database must not hold up an exit
	defer cancel()
	unlock, err := files.LockPin(ctx)
	if err != nil {
		log.Warn("could not advance this root's pin of the ledger", "err", err)
		return
	}
	defer unlock()
	base := *pin
	if now, ok, err := files.ReadPin(); err != nil {
		log.Warn("could not advance this root's pin of the ledger", "err", err)
		return
	} else if ok && now != *pin && (overrode == nil || now != *overrode) {
		base = now // another process of this host moved it since the open
		if base.LedgerID != id {
			log.Warn("this root's pin was moved to another ledger while this process had the ledger open: it stays there",
				"pin", base.String(), "found", id)
			return
		}
	}
	head, at, pruned, err := pinHead(ctx, s, id, base.Seq)
	switch {
	case err != nil:
	case head == base:
		return
	case base.LedgerID == id && (head.Seq < base.Seq || base.Seq > 0 && !pruned && at != base.Hash):
		log.Warn("the ledger went back while this process had it open (restored from a backup or rolled back): "+
			"this root's pin stays at the head this host saw, so the next writer here refuses the ledger", "pin", base.String(), "found", head.String())
		return
	default:
		err = files.WritePin(head)
	}
	if err != nil {
		log.Warn("could not advance this root's pin of the ledger", "err", err)
	}
}

// pinHead is the ledger's head as a pin, and the hash of its event at seq
// ("" where there is none). pruned: seq is below the live log's first
// event, taken out by a recorded prune (the triggers allow no other
// delete there), so its hash is not there to compare and only the seqs
// say whether the ledger went back.
func pinHead(ctx context.Context, q Querier, id string, seq int64) (head lockfile.Pin, at string, pruned bool, err error) {
	head.LedgerID = id
	err = q.QueryRowContext(ctx, `SELECT coalesce((SELECT seq FROM events ORDER BY seq DESC LIMIT 1), 0),
		coalesce((SELECT hash FROM events ORDER BY seq DESC LIMIT 1), ''), coalesce((SELECT hash FROM events WHERE seq = $1), ''),
		coalesce((SELECT seq FROM events ORDER BY seq LIMIT 1), 0) > $1`,
		seq).Scan(&head.Seq, &head.Hash, &at, &pruned)
	return head, at, pruned, err
}
