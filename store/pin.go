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
	// pin it overrode, to be recorded.
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
	return fmt.Sprintf("ledger: %s holds %s, but this host has written to %s (%s): %s; refusing to write there (fencing tokens could go "+
		"backwards). Point --database or --root back at that ledger, or, to go on from this state, run `lockledger project --accept-rollback` (recorded)",
		e.Where, e.Found, e.Pinned, e.Pin, e.Reason)
}

func (e *RolledBackError) Unwrap() error { return ErrRolledBack }

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
	head, at, err := pinHead(ctx, s, id, pin.Seq)
	if err != nil {
		return nil, nil, -1, fmt.Errorf("ledger: the head to check against %s: %w", files.Root(), err)
	}
	reason := ""
	switch {
	case !ok:
	case pin.LedgerID != id:
		reason = "another ledger"
	case head.Seq < pin.Seq:
		reason = fmt.Sprintf("an older state of it (head seq %d, below seq %d seen)", head.Seq, pin.Seq)
	case pin.Seq > 0 && at != pin.Hash:
		reason = fmt.Sprintf("another history of it (its event at seq %d is not the one seen)", pin.Seq)
	}
	if reason != "" && policy != PinAccept {
		return nil, nil, -1, &RolledBackError{Where: where, Pin: filepath.Join(files.Root(), lockfile.PinName), Pinned: pin, Found: head, Reason: reason}
	}
	if reason == "" {
		return &pin, nil, head.Seq, nil // advanced at close
	}
	if err := files.WritePin(head); err != nil {
		return nil, nil, -1, err
	}
	return &head, &pin, head.Seq, nil
}

// KeepPin advances the root's pin to the store's head at close, where it
// moved since pin (nil: the open pins nothing). A failure is logged: the
// pin stays at a head this host has seen.
func KeepPin(s Store, files *lockfile.Dir, id string, pin *lockfile.Pin, log *slog.Logger) {
	if pin == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond) // a lost database must not hold up an exit
	defer cancel()
	head, _, err := pinHead(ctx, s, id, 0)
	if err == nil && head != *pin {
		err = files.WritePin(head)
	}
	if err != nil {
		log.Warn("could not advance this root's pin of the ledger", "err", err)
	}
}

// pinHead is the ledger's head as a pin, and the hash of its event at seq.
func pinHead(ctx context.Context, q Querier, id string, seq int64) (head lockfile.Pin, at string, err error) {
	head.LedgerID = id
	err = q.QueryRowContext(ctx, `SELECT coalesce((SELECT seq FROM events ORDER BY seq DESC LIMIT 1), 0),
		coalesce((SELECT hash FROM events ORDER BY seq DESC LIMIT 1), ''), coalesce((SELECT hash FROM events WHERE seq = $1), '')`,
		seq).Scan(&head.Seq, &head.Hash, &at)
	return head, at, err
}
