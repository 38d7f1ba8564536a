package ledger

import (
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/store"
)

// Witnesses keep copies of the checkpoints a writer signs out of the
// ledger's reach: the hook through which a Ledger publishes, which the
// command line wires (package witness: files, directories and tlog
// witnesses that cosign). Before a writer signs, the new tree must extend
// what they hold (Last); once the write that signed a checkpoint has
// committed, they get it (AfterCommit).
type Witnesses interface {
	// Last is the checkpoints of ledger id signed by v that the witnesses
	// hold, and the first that could not be read (a warning), after the
	// others were read.
	Last(ctx context.Context, id string, v note.Verifier) ([]checkpoint.Earlier, error)
	// AfterCommit copies the checkpoint note of ledger id (size events,
	// signed at at) to every witness and has it cosigned, with proofs from
	// log. It returns where the note was written, the cosignatures for the
	// ledger to keep, and the failures joined; quiet (a checkpoint a write
	// signed on its own, which stands whatever the witnesses do), it logs
	// the failures instead.
	AfterCommit(ctx context.Context, id string, size int64, at time.Time, note string, log store.Witnessed, quiet bool) ([]string, []*store.Cosignature, error)
	// Wait waits for copies still under way, at most the witness timeout.
	Wait()
}

// WithWitnesses publishes every checkpoint signed through this Ledger to
// w once its write has committed (see Witnesses), and proves every tree it
// signs extends what w holds.
func WithWitnesses(w Witnesses) Option {
	return func(c *config) error { c.signing.witnesses = w; return nil }
}

// afterCommit hands cp to the witnesses, adds where it went to
// cp.Witnesses and cp.Cosigned, and stores the cosignatures got even when
// ctx ends meanwhile (the write is bounded by the busy timeout): a witness
// that has cosigned cp holds it either way.
func (l *Ledger) afterCommit(ctx context.Context, cp *Checkpointed, quiet bool) error {
	if l.signing.witnesses == nil {
		return nil
	}
	written, got, err := l.signing.witnesses.AfterCommit(ctx, l.id, cp.Size, cp.Time, cp.Note, store.Witnessed{S: l.store}, quiet)
	cp.Witnesses = append(cp.Witnesses, written...)
	if len(got) == 0 {
		return err
	}
	for _, c := range got {
		cp.Cosigned = append(cp.Cosigned, c.URL)
	}
	return errors.Join(err, l.update(context.WithoutCancel(ctx), func(w *writeTx) (error, error) {
		w.rows = true
		return nil, store.InsertCosignatures(ctx, w.q, got)
	}))
}

// publishing is the Ledger's one worker that copies the checkpoints its
// writes sign on their own to the witnesses and has them cosigned, off
// the writer's call: a write returns once its commit is durable and its
// head kept, so a slow or dead witness delays no caller (a heartbeat
// least of all: its lease's deadline does not wait for a witness). Only
// the latest checkpoint waiting matters, since it extends every earlier
// one: a newer one replaces one not yet started. The worker runs while
// there is one to publish; Close and Detach let it publish the latest and
// wait for it (a pass still under way for an earlier one is given up,
// the latest covering it). Each pass is bounded: the copies by the
// witness timeout, each cosignature by its witness's, the write that
// stores them by the busy timeout.
type publishing struct {
	mu      sync.Mutex
	next    *Checkpointed // waiting, not started
	running bool          // a worker is under way (and wg counts it)
	cancel  func()        // gives up the pass under way
	stopped bool          // Close or Detach began: no new worker
	wg      sync.WaitGroup
}

// publishLater hands cp to the publishing worker, starting one when none
// runs. Once Close or Detach has begun, it publishes cp in the caller's
// call instead, so that no worker is left that nobody waits for.
func (l *Ledger) publishLater(cp *Checkpointed) {
	p := &l.publishing
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		l.publishNow(context.Background(), cp)
		return
	}
	p.next = cp
	if !p.running {
		p.running = true
		p.wg.Add(1)
		go l.publishWorker()
	}
	p.mu.Unlock()
}

// publishWorker publishes the checkpoint waiting until none waits.
func (l *Ledger) publishWorker() {
	p := &l.publishing
	defer p.wg.Done()
	for {
		p.mu.Lock()
		cp := p.next
		p.next = nil
		if cp == nil {
			p.running = false
			p.mu.Unlock()
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		p.cancel = cancel
		p.mu.Unlock()
		l.publishNow(ctx, cp)
		cancel()
	}
}

// publishNow hands cp to the witnesses, quietly: the write that signed
// it stands whatever they do, and they log what failed (see
// Witnesses.AfterCommit); verify --witness-key names the checkpoints a
// witness did not cosign, as it does those whose cosignatures could not
// be stored here.
func (l *Ledger) publishNow(ctx context.Context, cp *Checkpointed) {
	if err := l.afterCommit(ctx, cp, true); err != nil && ctx.Err() == nil {
		l.log.Warn("a witness did not cosign the checkpoint (the write stands; verify --witness-key names the checkpoints it did not cosign)",
			"size", cp.Size, "err", err)
	}
}

// stopPublishing lets the worker publish the latest checkpoint and waits
// for it.
func (l *Ledger) stopPublishing() {
	p := &l.publishing
	p.mu.Lock()
	p.stopped = true
	if p.next != nil && p.cancel != nil {
		p.cancel()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
