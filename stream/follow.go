package stream

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/store"
)

// Source is the ledger a follower reads (a *ledger.Ledger opened for reading).
type Source interface {
	ID() string
	BeginRead(ctx context.Context) (*sql.Tx, error)
	WatchLog(ctx context.Context) (store.Waker, error)
}

// Defaults of Options.
const (
	DefaultEvery    = 1000
	DefaultInterval = time.Minute
	// DefaultRecheck is how long a follower waits for a wake before it
	// reads again anyway: a safety net for a lost wake (a PostgreSQL
	// connection that broke, inotify unavailable), not the way it learns
	// of appends.
	DefaultRecheck = 30 * time.Second
	DefaultBatch   = 1000
)

// quickRechecks are the re-reads after a wake that found nothing new: on
// SQLite the write-ahead log is written (which wakes the follower) just
// before the commit is published to readers in shared memory (which no
// file watch sees).
var quickRechecks = []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond,
	80 * time.Millisecond, 160 * time.Millisecond, 320 * time.Millisecond, 640 * time.Millisecond}

// Options are how a follower streams.
type Options struct {
	// After is the last seq the receiver holds: the stream starts at After+1.
	After int64
	// Every and Interval: a checkpoint record at least once every Every
	// events, and once Interval has passed since the last one while
	// events were written.
	Every    int64
	Interval time.Duration
	Recheck  time.Duration
	Batch    int
	Log      *slog.Logger
}

func (o *Options) defaults() {
	o.Every, o.Batch = cmp.Or(max(o.Every, 0), DefaultEvery), cmp.Or(max(o.Batch, 0), DefaultBatch)
	o.Interval, o.Recheck = cmp.Or(max(o.Interval, 0), DefaultInterval), cmp.Or(max(o.Recheck, 0), DefaultRecheck)
	o.Log = cmp.Or(o.Log, slog.New(slog.DiscardHandler))
}

// GapError: the log no longer holds the event after the one the receiver
// last got (archived, or removed).
type GapError struct {
	After int64 // the cursor
	Next  int64 // the first seq the log holds after it
}

func (e *GapError) Error() string {
	return fmt.Sprintf("stream: the log holds no event %d (the next it holds is %d): events were archived or removed; "+
		"get seq %d-%d from the archive, then follow with --after-seq %d", e.After+1, e.Next, e.After+1, e.Next-1, e.Next-1)
}

// Follow writes every event after o.After to w as it is appended, until
// ctx ends (a nil error: the stream stopped where it was asked to). Each
// batch of events is read in one read transaction; the events are written
// after it ends, one record per write, each stored checkpoint right after
// the event of its size, and a checkpoint record at least as often as
// o.Every and o.Interval ask (the newest stored checkpoint, when none was
// stored at the event just written). Follow signs nothing.
func Follow(ctx context.Context, src Source, w Writer, o Options) error {
	o.defaults()
	// Watching starts before the first read: no append after it is missed.
	wk, err := src.WatchLog(ctx)
	if err != nil {
		return stopped(ctx, err)
	}
	defer wk.Close()
	f := &follower{src: src, w: w, o: o, cursor: o.After, lastCP: time.Now()}
	if err := f.start(ctx); err != nil {
		return stopped(ctx, err)
	}
	quick := 0
	for {
		n, err := f.step(ctx)
		if err != nil {
			return stopped(ctx, err)
		}
		if n == o.Batch {
			continue
		}
		if n > 0 {
			quick = 0
		}
		d := o.Recheck
		if quick > 0 {
			d = quickRechecks[len(quickRechecks)-quick]
			quick--
		}
		if f.sinceCP > 0 {
			d = max(min(d, time.Until(f.lastCP.Add(o.Interval))), time.Millisecond)
		}
		began := time.Now()
		wk.Wait(ctx, d)
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(began) < d {
			quick = len(quickRechecks)
		}
	}
}

// stopped is err, unless ctx ended: a signal stopped the stream.
func stopped(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

type follower struct {
	src     Source
	w       Writer
	o       Options
	cursor  int64     // the last seq written
	sinceCP int64     // events written since the last checkpoint record
	lastCP  time.Time // when the last checkpoint record was written
	behind  bool      // said that the writers sign less often than asked
	// atCursor are the checkpoints of size cursor written.
	atCursor [][]byte
	// newest is the largest checkpoint written so far, which a stream
	// repeats when the writers sign less often than it is asked to.
	newest     []byte
	newestSize int64
}

// start writes what comes before the first event: for a stream after
// seq N, the Merkle tree at N and the newest stored checkpoint up to N.
func (f *follower) start(ctx context.Context) error {
	tx, err := f.src.BeginRead(ctx)
	if err != nil {
		return fmt.Errorf("ledger: read: %w", err)
	}
	defer tx.Rollback()
	last, _, err := store.TreeLag(ctx, tx)
	if err != nil {
		return err
	}
	if f.cursor > last {
		return events.Invalid("--after-seq", strconv.FormatInt(f.cursor, 10), fmt.Sprintf(
			"is past the ledger's last event (seq %d): the receiver holds events this ledger does not (another ledger's, or a restored older copy)", last))
	}
	f.o.Log.Info("following the log", "after_seq", f.cursor, "last_seq", last)
	if f.cursor == 0 {
		return nil
	}
	tree, err := checkpoint.TreeFrom(f.cursor, store.TreeReader(ctx, tx))
	if err != nil {
		return fmt.Errorf("stream: the Merkle tree at seq %d: %w (lockledger verify says why)", f.cursor, err)
	}
	newest, err := store.NewestCheckpoint(ctx, tx, f.cursor)
	if err != nil {
		return err
	}
	_ = tx.Rollback()
	if err := f.w.Start(f.cursor, tree.Frontier()); err != nil {
		return err
	}
	if newest != nil {
		return f.checkpoint(newest.Note)
	}
	return nil
}

// batch is what one read transaction found.
type batch struct {
	rows   []*replay.Row
	cps    []store.StoredCheckpoint // stored at the sizes read, and at the cursor
	newest *store.StoredCheckpoint  // the newest stored up to the last seq read
}

// step reads the events after the cursor (at most one batch) and writes
// them; it returns how many it wrote.
func (f *follower) step(ctx context.Context) (int, error) {
	b, err := f.read(ctx)
	if err != nil {
		return 0, err
	}
	next := 0
	for ; next < len(b.cps) && b.cps[next].Size <= f.cursor; next++ {
		if err := f.checkpoint(b.cps[next].Note); err != nil {
			return 0, err
		}
	}
	for _, row := range b.rows {
		if err := f.w.Event(newRecord(row)); err != nil {
			return 0, err
		}
		f.cursor, f.atCursor = row.Seq, nil
		f.sinceCP++
		for ; next < len(b.cps) && b.cps[next].Size <= row.Seq; next++ {
			if err := f.checkpoint(b.cps[next].Note); err != nil {
				return 0, err
			}
		}
		if f.sinceCP >= f.o.Every && f.newest != nil {
			if err := f.repeat(f.newest); err != nil {
				return 0, err
			}
		}
	}
	due := f.sinceCP > 0 && (f.sinceCP >= f.o.Every || time.Since(f.lastCP) >= f.o.Interval)
	if due && b.newest == nil {
		// Nothing signed yet (unsigned writers): nothing to repeat until
		// the writers sign.
		f.sinceCP, f.lastCP = 0, time.Now()
	}
	if due && b.newest != nil {
		if err := f.repeat(b.newest.Note); err != nil {
			return 0, err
		}
	}
	return len(b.rows), nil
}

// repeat writes the newest stored checkpoint again, where the writers
// signed none since.
func (f *follower) repeat(note []byte) error {
	if !f.behind {
		f.behind = true
		f.o.Log.Info("the writers sign less often than --checkpoint-every and --checkpoint-interval ask: the newest signed checkpoint is repeated, "+
			"and later events are vouched for once the writers sign them", "seq", f.cursor)
	}
	return f.checkpoint(note)
}

// checkpoint writes a stored checkpoint, of the size written so far,
// once: a checkpoint stored after the event of its size is written when
// the follower next reads.
func (f *follower) checkpoint(note []byte) error {
	if slices.ContainsFunc(f.atCursor, func(n []byte) bool { return bytes.Equal(n, note) }) {
		return nil
	}
	s, err := checkpoint.Open(note)
	if err != nil {
		f.o.Log.Warn("a stored checkpoint that does not parse is left out (lockledger verify says more)", "err", fmt.Errorf("stream: a stored checkpoint: %w", err))
		return nil
	}
	c := &Checkpoint{Note: note, Text: s.Checkpoint}
	if err := f.w.Checkpoint(c); err != nil {
		return err
	}
	f.sinceCP, f.lastCP = 0, time.Now()
	if c.Text.Size >= f.newestSize {
		f.newest, f.newestSize = note, c.Text.Size
	}
	if c.Text.Size == f.cursor {
		f.atCursor = append(f.atCursor, note)
	}
	return nil
}

func (f *follower) read(ctx context.Context) (*batch, error) {
	tx, err := f.src.BeginRead(ctx)
	if err != nil {
		return nil, fmt.Errorf("ledger: read: %w", err)
	}
	defer tx.Rollback()
	b := &batch{}
	err = replay.ScanRows(ctx, tx, replay.Filter{FromSeq: f.cursor + 1, ToSeq: f.cursor + int64(f.o.Batch)}, func(r *replay.Row) error {
		b.rows = append(b.rows, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(b.rows) == 0 {
		last, _, err := store.TreeLag(ctx, tx)
		if err != nil {
			return nil, err
		}
		if last > f.cursor {
			return nil, &GapError{After: f.cursor, Next: f.firstAfter(ctx, tx, last)}
		}
	} else if first := b.rows[0].Seq; first != f.cursor+1 {
		return nil, &GapError{After: f.cursor, Next: first}
	}
	for i := 1; i < len(b.rows); i++ {
		if b.rows[i].Seq != b.rows[i-1].Seq+1 {
			return nil, fmt.Errorf("stream: the log skips from seq %d to %d: it is damaged (lockledger verify says where)", b.rows[i-1].Seq, b.rows[i].Seq)
		}
	}
	last := f.cursor
	if len(b.rows) > 0 {
		last = b.rows[len(b.rows)-1].Seq
	}
	if last > 0 {
		if b.cps, err = store.StoredCheckpoints(ctx, tx, max(f.cursor, 1), last); err != nil {
			return nil, err
		}
		slices.SortStableFunc(b.cps, func(x, y store.StoredCheckpoint) int { return cmp.Compare(x.Size, y.Size) })
	}
	if f.sinceCP > 0 || len(b.rows) > 0 {
		if b.newest, err = store.NewestCheckpoint(ctx, tx, last); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// firstAfter is the first seq after the cursor that the log holds (last
// when it cannot tell).
func (f *follower) firstAfter(ctx context.Context, tx *sql.Tx, last int64) int64 {
	first := last
	_ = replay.ScanRows(ctx, tx, replay.Filter{FromSeq: f.cursor + 1, ToSeq: last}, func(r *replay.Row) error {
		first = r.Seq
		return replay.ErrStop
	})
	return first
}
