package ledger

// Signed checkpoints: a tree head signed with a key kept outside the root,
// stored in the ledger and copied to witnesses, so that rewriting the log
// also needs the key, or every witness. See package checkpoint.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/lockfile"
)

// Defaults of the automatic checkpoints a writer with a key signs.
const (
	DefaultCheckpointEvery    = 1000
	DefaultCheckpointInterval = time.Minute
)

type signing struct {
	signer    note.Signer
	witnesses []string
	every     int64
	interval  time.Duration
	timeout   time.Duration
}

// WithSigner makes every writer sign checkpoints with s: automatically
// (see WithCheckpointPolicy) and on Checkpoint.
func WithSigner(s note.Signer) Option {
	return func(c *config) error {
		if s == nil {
			return errors.New("ledger: WithSigner(nil)")
		}
		c.signing.signer = s
		return nil
	}
}

// WithWitnesses copies every checkpoint signed through this Ledger to each
// path: a directory gets one new file per checkpoint (never replacing
// one), anything else is a file the checkpoint is appended to (created if
// missing), fsynced.
func WithWitnesses(paths ...string) Option {
	return func(c *config) error {
		for _, p := range paths {
			if p == "" {
				return events.Invalid("witness", p, "must not be empty")
			}
		}
		c.signing.witnesses = append(c.signing.witnesses, paths...)
		return nil
	}
}

// WithCheckpointPolicy sets when a writer with a key signs a checkpoint on
// its own: once every events events, and with the first write after
// interval has passed since the last checkpoint. Zero keeps a default.
func WithCheckpointPolicy(every int64, interval time.Duration) Option {
	return func(c *config) error {
		if every < 0 {
			return events.Invalid("checkpoint every", fmt.Sprint(every), "must be at least 1 event")
		}
		if interval < 0 {
			return events.Invalid("checkpoint interval", interval.String(), "must not be negative")
		}
		if every > 0 {
			c.signing.every = every
		}
		if interval > 0 {
			c.signing.interval = interval
		}
		return nil
	}
}

// Checkpointed is a checkpoint just signed and stored.
type Checkpointed struct {
	Size int64     `json:"size"`
	Root tlog.Hash `json:"root"`
	Key  string    `json:"key"`
	Time time.Time `json:"time"`
	Note string    `json:"note"`
	// Witnesses are the paths it was copied to: the file written, for a
	// directory.
	Witnesses []string `json:"witnesses"`
}

// ErrNoSigner: a checkpoint asked of a Ledger opened without a key.
var ErrNoSigner = errors.New("no signing key")

// WitnessError: a checkpoint was stored in the ledger, but copying it to a
// witness failed.
type WitnessError struct {
	Path string
	Err  error
}

func (e *WitnessError) Error() string {
	return fmt.Sprintf("witness %s: %v (the checkpoint is stored in the ledger)", e.Path, e.Err)
}
func (e *WitnessError) Unwrap() error { return e.Err }

// Checkpoint signs a checkpoint of the whole log now, stores it and copies
// it to every witness, after letting the writer mutex go. A failed copy is
// a *WitnessError, after the others were tried.
func (l *Ledger) Checkpoint(ctx context.Context) (*Checkpointed, error) {
	cp, err := l.checkpointNow(ctx)
	if err != nil {
		return nil, err
	}
	return cp, l.publish(ctx, cp)
}

func (l *Ledger) checkpointNow(ctx context.Context) (*Checkpointed, error) {
	if l.signing.signer == nil {
		return nil, fmt.Errorf("ledger: checkpoint: %w", ErrNoSigner)
	}
	var cp *Checkpointed
	err := l.update(ctx, func(w *writeTx) (error, error) {
		seq, _, err := head(ctx, w.q, l.genesis)
		if err != nil {
			return nil, err
		}
		if seq == 0 {
			return nil, fmt.Errorf("ledger: checkpoint: the ledger holds no events yet; nothing to sign")
		}
		if cp, err = l.signCheckpoint(ctx, w.q, seq, w.now, false); err != nil {
			return nil, err
		}
		w.rows = true
		return nil, nil
	})
	if err != nil {
		return nil, err
	}
	return cp, nil
}

// dueCheckpoint signs and stores a checkpoint of the first seq events in
// the write transaction q when the policy says one is due; nil otherwise.
func (l *Ledger) dueCheckpoint(ctx context.Context, q preparedTx, seq int64, now time.Time) (*Checkpointed, error) {
	if l.signing.signer == nil || seq == 0 {
		return nil, nil
	}
	var size int64
	var at string
	err := q.QueryRowContext(ctx, `SELECT size, created_at FROM checkpoints ORDER BY id DESC LIMIT 1`).Scan(&size, &at)
	switch {
	case err == nil:
		t, perr := events.ParseTime(at)
		if size >= seq || (seq-size < l.signing.every && perr == nil && now.Sub(t) < l.signing.interval) {
			return nil, nil
		}
	case !errors.Is(err, sql.ErrNoRows):
		return nil, err
	}
	return l.signCheckpoint(ctx, q, seq, now, true)
}

// signCheckpoint signs and stores a checkpoint of the first seq events.
// One signed on the writer's own carries its policy: the promise that
// verify holds later events to.
func (l *Ledger) signCheckpoint(ctx context.Context, q preparedTx, seq int64, now time.Time, auto bool) (*Checkpointed, error) {
	root, err := tlog.TreeHash(seq, treeReader(ctx, q))
	if err != nil {
		return nil, fmt.Errorf("ledger: checkpoint: the tree of %d events: %w", seq, err)
	}
	c := checkpoint.Checkpoint{Origin: checkpoint.Origin(l.id), Size: seq, Root: root, Time: now}
	if auto {
		c.NextEvery, c.NextWithin = l.signing.every, l.signing.interval
	}
	msg, err := checkpoint.Sign(c, l.signing.signer)
	if err != nil {
		return nil, fmt.Errorf("ledger: checkpoint: sign: %w", err)
	}
	if _, err := q.ExecContext(ctx, `INSERT INTO checkpoints (size, root, note, key_name, created_at) VALUES ($1, $2, $3, $4, $5)`,
		seq, root.String(), string(msg), l.signing.signer.Name(), events.FormatTime(now)); err != nil {
		return nil, fmt.Errorf("ledger: checkpoint: store: %w", err)
	}
	return &Checkpointed{Size: seq, Root: root, Key: l.signing.signer.Name(), Time: now, Note: string(msg), Witnesses: []string{}}, nil
}

// DefaultWitnessTimeout bounds how long a write waits for its witnesses.
const DefaultWitnessTimeout = 10 * time.Second

// WithWitnessTimeout bounds how long publishing a checkpoint waits for the
// witnesses (a hard NFS mount can block open, write or fsync for ever);
// past it the checkpoint stays stored in the ledger and the witness is
// reported as not written. Zero keeps DefaultWitnessTimeout.
func WithWitnessTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return events.Invalid("witness timeout", d.String(), "must not be negative")
		}
		if d > 0 {
			c.signing.timeout = d
		}
		return nil
	}
}

// ErrWitnessTimeout: a witness did not take a checkpoint within the
// witness timeout.
var ErrWitnessTimeout = errors.New("the witness did not answer in time")

// publish copies a stored checkpoint to every witness. It is called with
// the writer mutex let go, and waits at most the witness timeout (or until
// ctx ends): the copies run in a goroutine, because a blocked open or
// fsync cannot be interrupted. A copy still blocked then is left to finish
// on its own; l.publishing counts it, and Close waits for it, again for at
// most the witness timeout, so that a process exits despite a hung
// witness (the kernel call dies with it) and a Ledger never outlives a
// copy it started unknowingly. The goroutine touches nothing but its own
// copy of the paths and its result channel.
func (l *Ledger) publish(ctx context.Context, cp *Checkpointed) error {
	if len(l.signing.witnesses) == 0 {
		return nil
	}
	type result struct {
		written []string
		err     error
	}
	done := make(chan result, 1)
	witnesses := append([]string(nil), l.signing.witnesses...)
	id, note, size, at := l.id, cp.Note, cp.Size, cp.Time
	l.publishing.Add(1)
	go func() {
		defer l.publishing.Done()
		var r result
		for _, w := range witnesses {
			where, err := writeWitness(w, id, size, at, note)
			if err != nil {
				if r.err == nil {
					r.err = &WitnessError{Path: w, Err: err}
				}
				continue
			}
			r.written = append(r.written, where)
		}
		done <- r
	}()
	timer := time.NewTimer(l.signing.timeout)
	defer timer.Stop()
	select {
	case r := <-done:
		cp.Witnesses = append(cp.Witnesses, r.written...)
		return r.err
	case <-timer.C:
		return &WitnessError{Path: strings.Join(witnesses, ", "), Err: fmt.Errorf("%w (%s)", ErrWitnessTimeout, l.signing.timeout)}
	case <-ctx.Done():
		return &WitnessError{Path: strings.Join(witnesses, ", "), Err: ctx.Err()}
	}
}

// waitPublishing waits for witness copies still under way, at most the
// witness timeout (see publish).
func (l *Ledger) waitPublishing() {
	done := make(chan struct{})
	go func() {
		l.publishing.Wait()
		close(done)
	}()
	d := l.signing.timeout
	if d <= 0 {
		d = DefaultWitnessTimeout
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		l.log.Warn("a witness is still being written; leaving it", "timeout", l.signing.timeout)
	}
}

// publishQuietly is publish for a checkpoint a write made on its own: the
// write succeeded, so a witness that failed is a warning.
func (l *Ledger) publishQuietly(ctx context.Context, cp *Checkpointed) {
	if cp == nil {
		return
	}
	if err := l.publish(ctx, cp); err != nil {
		l.log.Warn("could not copy a checkpoint to a witness; it is stored in the ledger", "size", cp.Size, "err", err)
	}
}

// WitnessFileName is the name of the file a witness directory gets for a
// checkpoint of ledger id: sorted by size, then time.
func WitnessFileName(id string, size int64, t time.Time) string {
	return fmt.Sprintf("%s-%012d-%s.checkpoint", id, size, strings.ReplaceAll(t.UTC().Format("20060102T150405.000000000Z"), ".", ""))
}

// ErrWitnessKind: a witness path that is neither a regular file nor a
// directory (a FIFO or a device would block the writer, or take the
// checkpoint nowhere durable).
var ErrWitnessKind = errors.New("not a regular file or a directory")

func writeWitness(path, id string, size int64, at time.Time, note string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if err == nil && fi.IsDir() {
		p := filepath.Join(path, WitnessFileName(id, size, at))
		return p, appendWitness(p, os.O_EXCL, note, path)
	}
	if err == nil && !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%w (%s)", ErrWitnessKind, fi.Mode().Type())
	}
	return path, appendWitness(path, os.O_APPEND, note, "")
}

// appendWitness writes note to a witness file; O_NONBLOCK keeps a path
// swapped for a FIFO since the Stat from blocking the open, and the
// opened file is checked again before anything is written.
func appendWitness(path string, flag int, note, dir string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|syscall.O_NONBLOCK|flag, 0o644)
	if err != nil {
		return err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("%w (%s)", ErrWitnessKind, fi.Mode().Type())
		}
		return err
	}
	if _, err := f.WriteString(note); err != nil {
		f.Close()
		return err
	}
	if err := lockfile.SyncClose(f); err != nil {
		return err
	}
	if dir != "" {
		return syncPath(dir)
	}
	return nil
}

// syncPath fsyncs a directory, so that a file created in it survives a crash.
func syncPath(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return lockfile.SyncClose(d)
}
