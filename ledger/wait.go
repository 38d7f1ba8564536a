package ledger

import (
	"context"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/events"
)

// Backoff bounds for waiting on a held lock: full jitter, each sleep drawn
// from [0, min(WaitBackoffCap, WaitBackoffBase*2^attempt)). A change to the
// lock's file (release, steal) wakes the waiter at once.
const (
	WaitBackoffBase = 20 * time.Millisecond
	WaitBackoffCap  = time.Second
)

// WaitObserver hears about every blocked attempt while a caller waits.
type WaitObserver func(blocked *HeldError, waited time.Duration)

// AcquireWait tries req until it succeeds, the lock turns out stale or
// invalid, or wait runs out (or ctx ends). Every attempt is the same
// request (one request id, generated once when req has none). Giving up
// records one acquire_blocked event with the time waited and returns the
// *HeldError, or the *StaleError of the attempt that found the lock stale.
func (l *Ledger) AcquireWait(ctx context.Context, req AcquireRequest, wait time.Duration, observe WaitObserver) (*Acquisition, error) {
	start := time.Now()
	deadline := start.Add(wait)
	if req.RequestID == "" {
		req.RequestID = events.NewRequestID(l.now())
	}
	req.Waiting = true
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) && wait > 0 {
		deadline = d
	}
	var watch waker
	defer func() {
		if watch != nil {
			watch.close()
		}
	}()
	for attempt := 0; ; attempt++ {
		last := wait <= 0 || !time.Now().Before(deadline) || ctx.Err() != nil
		req.RecordBlocked = last
		req.Waited = time.Since(start)
		actx := ctx
		if last && ctx.Err() != nil {
			// Giving up because the caller cancelled: still record it.
			var cancel context.CancelFunc
			actx, cancel = context.WithTimeout(context.WithoutCancel(ctx), l.busy)
			defer cancel()
		}
		var a *Acquisition
		var err error
		if held := l.peekHeld(ctx, req, attempt, last); held != nil {
			err = held
		} else if a, err = l.TryAcquire(actx, req); err == nil {
			return a, nil
		}
		var held *HeldError
		switch {
		case errors.As(err, &held):
			held.Waited = req.Waited
		case IsTransient(err) && !last:
			// passing: retry like a held lock
		default:
			return nil, err
		}
		if last {
			return nil, err
		}
		if held != nil && observe != nil {
			observe(held, req.Waited)
		}
		if watch == nil {
			watch = l.store.watch(req.Lock)
		}
		sleep := jitter(attempt)
		if remain := time.Until(deadline); sleep > remain {
			sleep = remain
		}
		watch.wait(ctx, sleep)
	}
}

// peekHeld answers a waiter's attempt that could only be refused without
// taking the writer mutex: the lock's row and file, read outside any write
// transaction, show an active holder other than the request, with nothing
// to repair and no extra targets to reconcile. Many waiters would otherwise
// keep the writer mutex busy with attempts doomed to fail, and starve the
// holder's own release. The first attempt (which validates the request)
// and the last (which records acquire_blocked) always go through
// TryAcquire, as does anything peekHeld is not sure of (nil).
func (l *Ledger) peekHeld(ctx context.Context, req AcquireRequest, attempt int, last bool) *HeldError {
	if attempt == 0 || last || len(req.Targets) > 0 {
		return nil
	}
	r, err := loadRow(ctx, l.db, req.Lock)
	if err != nil {
		return nil
	}
	v, err := l.inspect(req.Lock, r)
	if err != nil || len(v.repairs) > 0 || v.holder == nil || v.interloper {
		return nil
	}
	h := v.holder
	if !h.foreign && h.rec.RequestID == req.RequestID {
		return nil
	}
	now, err := l.judgeTime(ctx)
	if err != nil {
		return nil
	}
	state, job := judge(h, now, l.host, l.probe, req.MaxAge)
	if state != events.StateHeld {
		return nil
	}
	return &HeldError{Lock: req.Lock, Holder: h.rec, Foreign: h.foreign, Corrupt: h.corrupt, JobPIDs: job}
}

func jitter(attempt int) time.Duration {
	ceil := WaitBackoffCap
	if attempt < 16 {
		if c := WaitBackoffBase << attempt; c < ceil {
			ceil = c
		}
	}
	return time.Duration(rand.Int64N(int64(ceil))) + time.Millisecond
}

// dirWatch wakes a waiter when a lock file changes, through inotify on the
// locks directory; where inotify is unavailable it degrades to sleeping.
type dirWatch struct {
	fd   int
	name string
}

func watchLock(dir, name string) *dirWatch {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return &dirWatch{fd: -1}
	}
	mask := uint32(unix.IN_DELETE | unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_CREATE)
	if _, err := unix.InotifyAddWatch(fd, filepath.Clean(dir), mask); err != nil {
		unix.Close(fd)
		return &dirWatch{fd: -1}
	}
	return &dirWatch{fd: fd, name: name}
}

// wait sleeps up to d, returning early when the watched file changes or ctx ends.
func (w *dirWatch) wait(ctx context.Context, d time.Duration) {
	end := time.Now().Add(d)
	for {
		remain := time.Until(end)
		if remain <= 0 || ctx.Err() != nil {
			return
		}
		slice := min(remain, 50*time.Millisecond)
		if w.fd < 0 {
			_ = sleepCtx(ctx, slice)
			continue
		}
		fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(slice/time.Millisecond)+1)
		if err != nil && !errors.Is(err, unix.EINTR) {
			_ = sleepCtx(ctx, slice)
			continue
		}
		if n > 0 && w.drain() {
			return
		}
	}
}

// drain reads pending events and reports whether one named the lock file.
func (w *dirWatch) drain() bool {
	var buf [4096]byte
	hit := false
	for {
		n, err := unix.Read(w.fd, buf[:])
		if n <= 0 || err != nil {
			return hit
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			nameBytes := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			end := 0
			for end < len(nameBytes) && nameBytes[end] != 0 {
				end++
			}
			if string(nameBytes[:end]) == w.name {
				hit = true
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

func (w *dirWatch) close() {
	if w.fd >= 0 {
		unix.Close(w.fd)
	}
}
