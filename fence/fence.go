// Package fence makes a fencing token useful: it lets a resource refuse a
// write whose token is below the highest it has accepted, so that a holder
// whose lock was taken over (it paused, its lease ran out, another run
// took the lock with a higher token) cannot overwrite what the newer
// holder wrote. A fencing token is the seq of the acquisition that gave
// the lock (LOCKLEDGER_FENCING_TOKEN for a run's job,
// lease.Lease.FencingToken in Go); tokens only go up.
//
// Three fences check the same rule, token >= current (equal passes: one
// holding writes many times), each where the resource is:
//
//   - WriteFile: a file, its current token kept beside it in
//     PATH.fence, the check and the replace under an flock of that file
//     (lockledger fence write).
//   - PostgresSQL: a table whose rows carry fencing_token, refused by the
//     database itself (a trigger over the lockledger_fences table).
//   - Fence: a Go service's own resource, the current token in memory.
//
// Every refusal is a *StaleError (errors.Is ErrStale); Record appends it
// to the ledger as fence_rejected, so that an audit sees every overlap a
// fence prevented. docs/fencing.md is the guide.
package fence

import (
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/lockledger/lockledger/events"
)

// ErrStale is wrapped by every refusal of a stale token.
var ErrStale = errors.New("stale fencing token")

// StaleError is a write refused because its token was below the
// resource's current one: a later holding has written there.
type StaleError struct {
	// Fence is the fence that refused (events.FenceFileWrite,
	// events.FencePostgresWrite, events.FenceCheck).
	Fence    string
	Resource string
	Token    int64 // the refused write's
	Current  int64 // the resource's, above Token
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("%s: fencing token %d is stale: the resource has seen token %d, a later holding's; the write was refused",
		e.Resource, e.Token, e.Current)
}

func (e *StaleError) Unwrap() error { return ErrStale }

// Payload is the error as fence_rejected's payload.
func (e *StaleError) Payload() events.FenceRejectedPayload {
	return events.FenceRejectedPayload{Fence: e.Fence, Resource: e.Resource, StaleToken: e.Token, CurrentToken: e.Current}
}

// ValidToken refuses a token that no acquisition gives (tokens are seqs,
// from 1), naming field.
func ValidToken(field string, token int64) error {
	if token < 1 {
		return events.Invalid(field, strconv.FormatInt(token, 10), "must be a fencing token: a positive integer")
	}
	return nil
}

// ParseToken reads a token as written in LOCKLEDGER_FENCING_TOKEN and
// printed by acquire, naming field when it is not one.
func ParseToken(field, s string) (int64, error) {
	t, err := strconv.ParseInt(s, 10, 64)
	if err != nil || t < 1 {
		return 0, events.Invalid(field, s, "must be a fencing token: a positive integer")
	}
	return t, nil
}

// Check is the rule every fence applies: token passes when it is not
// below current (equal passes: one holding writes many times). A refusal
// is a *StaleError with Fence events.FenceCheck.
func Check(resource string, token, current int64) error {
	if token < current {
		return &StaleError{Fence: events.FenceCheck, Resource: resource, Token: token, Current: current}
	}
	return nil
}

// Fence is a resource's current token, held in memory by a Go service
// that owns the resource and is given writes (with their tokens) by
// lease holders. The zero Fence has seen no token. Safe for concurrent use.
type Fence struct {
	// Resource names the resource in refusals.
	Resource string

	mu      sync.Mutex
	current int64
}

// NewFence is a Fence for resource that has already seen token current
// (0: none), e.g. the token stored with the resource's data.
func NewFence(resource string, current int64) *Fence {
	return &Fence{Resource: resource, current: current}
}

// Current is the highest token the fence has admitted.
func (f *Fence) Current() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.current
}

// Admit checks token and, when it passes, makes it the current one.
func (f *Fence) Admit(token int64) error {
	return f.Do(token, func() error { return nil })
}

// Do runs write when token passes, under the fence's mutex, so that no
// write with a lower token runs after it. The token becomes current only
// when write succeeds; a refusal runs nothing. The refusal is a
// *StaleError (Fence events.FenceCheck); write's own error is returned as
// it is.
func (f *Fence) Do(token int64, write func() error) error {
	if err := ValidToken("fencing token", token); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := Check(f.Resource, token, f.current); err != nil {
		return err
	}
	if err := write(); err != nil {
		return err
	}
	f.current = token
	return nil
}
