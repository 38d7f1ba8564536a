// Package witness copies signed checkpoints to witnesses: files and
// directories kept outside the ledger's root (another volume or host), so
// that rewriting the log also needs rewriting every witness, and tlog
// witnesses off the machine that cosign them (package tlogwitness). A
// Publisher never blocks its caller longer than its timeout, whatever a
// witness does. It is the ledger's post-commit hook (ledger.Witnesses),
// which the command line wires (ledger.WithWitnesses).
//
// docs/architecture.md shows where this package sits among the others.
package witness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockledger/lockledger/store"
	"github.com/lockledger/lockledger/witness/tlogwitness"
)

// DefaultTimeout bounds how long a publish waits for its witnesses.
const DefaultTimeout = 10 * time.Second

// ErrTimeout: a witness did not take a checkpoint within the timeout.
var ErrTimeout = errors.New("the witness did not answer in time")

// Error: a checkpoint was stored in the ledger, but copying it to a
// witness failed.
type Error struct {
	Path string
	Err  error
}

func (e *Error) Error() string {
	return fmt.Sprintf("witness %s: %v (the checkpoint is stored in the ledger)", e.Path, e.Err)
}
func (e *Error) Unwrap() error { return e.Err }

// Publisher copies checkpoints to a fixed list of witnesses. It is safe
// for concurrent use.
type Publisher struct {
	paths     []string
	cosigners []*tlogwitness.Witness
	timeout   time.Duration
	log       *slog.Logger
	// running counts copies under way (see Publish).
	running sync.WaitGroup
}

// New returns a Publisher to paths (none: publishing does nothing) that
// waits at most timeout for them (zero or less: DefaultTimeout), has each
// of cosigners cosign every checkpoint it publishes after a commit
// (AfterCommit), and warns on log (nil: nowhere).
func New(paths []string, timeout time.Duration, log *slog.Logger, cosigners ...*tlogwitness.Witness) *Publisher {
	return &Publisher{paths: slices.Clone(paths), cosigners: cosigners, timeout: cmp.Or(max(timeout, 0), DefaultTimeout),
		log: cmp.Or(log, slog.New(slog.DiscardHandler))}
}

// Publish copies the checkpoint note of ledger id, signed at at over size
// events, to every witness: a directory gets one new file (FileName),
// anything else is a file the note is appended to (created if missing),
// fsynced. It returns the paths written (the file, for a directory) and
// the first failure, a *Error, after the other witnesses were tried.
//
// It waits at most the timeout (or until ctx ends): the copies run in a
// goroutine, because a blocked open or fsync (a hard NFS mount) cannot be
// interrupted. A copy still blocked then is left to finish on its own;
// Wait waits for it, again for at most the timeout, so that a process
// exits despite a hung witness (the kernel call dies with it) and the
// owner of a Publisher never outlives a copy it started unknowingly. The
// goroutine touches nothing but the paths and its result channel.
func (p *Publisher) Publish(ctx context.Context, id string, size int64, at time.Time, note string) ([]string, error) {
	if len(p.paths) == 0 {
		return nil, nil
	}
	type result struct {
		written []string
		err     error
	}
	r, err := within(ctx, p, func() (r result) {
		for _, w := range p.paths {
			where, err := write(w, id, size, at, note)
			if err != nil {
				if r.err == nil {
					r.err = &Error{Path: w, Err: err}
				}
				continue
			}
			r.written = append(r.written, where)
		}
		return r
	})
	if err != nil {
		return nil, &Error{Path: strings.Join(p.paths, ", "), Err: err}
	}
	return r.written, r.err
}

// within runs fn in a goroutine that Wait waits for, and waits for its
// result at most the timeout, or until ctx ends: past either it returns
// ErrTimeout (with the timeout) or ctx's error, leaving fn to finish on
// its own (see Publish).
func within[T any](ctx context.Context, p *Publisher, fn func() T) (T, error) {
	done := make(chan T, 1)
	p.running.Add(1)
	go func() {
		defer p.running.Done()
		done <- fn()
	}()
	timer := time.NewTimer(p.timeout)
	defer timer.Stop()
	var zero T
	select {
	case r := <-done:
		return r, nil
	case <-timer.C:
		return zero, fmt.Errorf("%w (%s)", ErrTimeout, p.timeout)
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// AfterCommit is the ledger's hook (ledger.Witnesses) for the checkpoint
// note of ledger id a write signed, once it committed: it copies the note
// to every witness (Publish) and has every cosigner cosign it, with proofs
// from log (tlogwitness.CosignAll). It returns the paths written, the
// cosignatures for the ledger to keep, and the failures joined (a refusal,
// a witness that cosigned a tree this log does not extend, is a
// *tlogwitness.RefusedError). Quiet, for a checkpoint a write signed on
// its own, logs the failures instead, since the write stands: a refusal
// is an error, a witness that could not be reached a warning, and verify
// --witness-key names the checkpoints a witness did not cosign; nothing is
// logged once ctx has ended (given up for a later checkpoint, which covers
// this one).
func (p *Publisher) AfterCommit(ctx context.Context, id string, size int64, at time.Time, note string, log store.Witnessed, quiet bool) ([]string, []*store.Cosignature, error) {
	written, err := p.Publish(ctx, id, size, at, note)
	if quiet && err != nil {
		p.log.Warn("could not copy a checkpoint to a witness; it is stored in the ledger", "size", size, "err", err)
		err = nil
	}
	got, cerr := tlogwitness.CosignAll(ctx, p.cosigners, []byte(note), log)
	if !quiet {
		return written, got, errors.Join(err, cerr)
	}
	var refused *tlogwitness.RefusedError
	switch {
	case cerr == nil || ctx.Err() != nil:
	case errors.As(cerr, &refused):
		p.log.Error("a witness did not cosign the checkpoint (the write stands)", "size", size, "err", cerr)
	default:
		p.log.Warn("a witness did not cosign the checkpoint (the write stands; verify --witness-key names the checkpoints it did not cosign)",
			"size", size, "err", cerr)
	}
	return written, got, nil
}

// Wait waits for copies still under way (see Publish), at most the
// timeout; past it, it warns and leaves them.
func (p *Publisher) Wait() {
	done := make(chan struct{})
	go func() {
		p.running.Wait()
		close(done)
	}()
	timer := time.NewTimer(p.timeout)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		p.log.Warn("a witness is still being written; leaving it", "timeout", p.timeout)
	}
}
