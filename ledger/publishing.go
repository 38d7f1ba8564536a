package ledger

import (
	"context"
	"errors"
	"sync"

	"github.com/lockledger/lockledger/witness/tlogwitness"
)

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

// publishNow copies cp to the witnesses and has it cosigned. The write
// that signed it stands whatever they do: a failure is logged, and verify
// --witness-key names the checkpoints a witness did not cosign. A refusal
// (the witness cosigned a tree this log does not extend) is an error, a
// witness that could not be reached a warning.
func (l *Ledger) publishNow(ctx context.Context, cp *Checkpointed) {
	l.witnesses.PublishQuietly(ctx, l.id, cp.Size, cp.Time, cp.Note)
	err := l.cosign(ctx, cp)
	var refused *tlogwitness.RefusedError
	switch {
	case ctx.Err() != nil:
		// Given up for a later checkpoint, which covers this one.
	case errors.As(err, &refused):
		l.log.Error("a witness did not cosign the checkpoint (the write stands)", "size", cp.Size, "err", err)
	case err != nil:
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
