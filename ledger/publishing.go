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
// there is one to publish; Close and Detach let it finish what waits and
// wait for it. Each pass is bounded: the copies by the witness timeout,
// each cosignature by its witness's, the write that stores them by the
// busy timeout.
type publishing struct {
	mu      sync.Mutex
	next    *Checkpointed // waiting, not started
	running bool          // a worker is under way (and wg counts it)
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
		l.publishNow(cp)
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
		p.mu.Unlock()
		l.publishNow(cp)
	}
}

// publishNow copies cp to the witnesses and has it cosigned. The write
// that signed it stands whatever they do: a failure is logged, and verify
// --witness-key names the checkpoints a witness did not cosign. A refusal
// (the witness cosigned a tree this log does not extend) is an error, a
// witness that could not be reached a warning.
func (l *Ledger) publishNow(cp *Checkpointed) {
	ctx := context.Background()
	l.witnesses.PublishQuietly(ctx, l.id, cp.Size, cp.Time, cp.Note)
	err := l.cosign(ctx, cp)
	var refused *tlogwitness.RefusedError
	switch {
	case errors.As(err, &refused):
		l.log.Error("a witness did not cosign the checkpoint (the write stands)", "size", cp.Size, "err", err)
	case err != nil:
		l.log.Warn("a witness did not cosign the checkpoint (the write stands; verify --witness-key names the checkpoints it did not cosign)",
			"size", cp.Size, "err", err)
	}
}

// stopPublishing lets the worker publish what waits and waits for it.
func (l *Ledger) stopPublishing() {
	p := &l.publishing
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	p.wg.Wait()
}
