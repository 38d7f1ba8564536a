package invocation

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
)

// Reader is an open ledger and a read-only transaction on it: one snapshot
// of the database, taken without the writer lock (see ledger.BeginRead).
type Reader struct {
	g      *Globals
	Ledger *ledger.Ledger
	Tx     *sql.Tx
}

// Reading runs read on one snapshot of the ledger: opened for Reads, and
// read in one read-only transaction, rolled back after.
func (g *Globals) Reading(ctx context.Context, read func(*Reader) error) error {
	l, err := g.Open(ctx, Reads)
	if err != nil {
		return err
	}
	tx, err := l.BeginRead(ctx)
	if err != nil {
		l.Close()
		return fmt.Errorf("ledger: read: %w", err)
	}
	defer g.Finish(l)
	defer func() { _ = tx.Rollback() }()
	return read(&Reader{g: g, Ledger: l, Tx: tx})
}

// NoteArchived says on stderr, for a read of a pruned log, what
// ArchivedNote says.
func (r *Reader) NoteArchived(ctx context.Context) {
	if n := ArchivedNote(ctx, r); n != "" {
		r.g.Sayf("note: %s", n)
	}
}

// ArchivedNote says, for a read of a pruned log, that it reads only the
// live log and which archive holds the events before it ("" when nothing
// was pruned).
func ArchivedNote(ctx context.Context, r *Reader) string {
	a, err := replay.LastPrune(ctx, r.Tx)
	if err != nil || a == nil {
		return ""
	}
	return fmt.Sprintf("events below seq %d are archived (archive sha256 %s, recorded by ledger_pruned at seq %d): this reads the live log, from seq %d",
		a.BelowSeq, a.ArchiveSHA256, a.MarkerSeq, a.BelowSeq)
}

// ReadInput reads the file at path, or standard input when path is "-",
// as ReadFile does. With line, for input of which only the first line is
// read (a secret), a terminal is read until that line ends: typed, it ends
// with Enter, not with Ctrl-D; and it is typed unseen, as a password is,
// Ctrl-\ ending it as Ctrl-C does (an *Interrupt of SIGQUIT).
func (g *Globals) ReadInput(ctx context.Context, field, path string, limit int64, line bool) ([]byte, error) {
	if path != "-" {
		return readFile(ctx, field, path, limit, line)
	}
	if f, ok := g.IO.In.(*os.File); ok {
		b, err := readFrom(ctx, f, limit, line)
		return b, inputError(err, field, "-", limit)
	}
	b, err := readAtMost(g.IO.In, limit)
	return b, tooLong(err, field, "-", limit)
}

// Stdin is standard input, its waits for input those of Waiting when it
// is a file.
func (g *Globals) Stdin(ctx context.Context) io.Reader {
	if f, ok := g.IO.In.(*os.File); ok {
		return Waiting(ctx, f)
	}
	return g.IO.In
}

// NoLimit is ReadFile's limit for a file read whole, however long
// (checkpoints a witness has gathered over the ledger's life).
const NoLimit int64 = math.MaxInt64

// ReadFile reads the file at path whole. One that cannot be opened, or a
// directory, is bad input naming field, and so is one longer than limit
// bytes: refused, not cut short, since the part read would be taken for
// the whole (a secret cut that never matches, a key or proof cut that
// names the wrong fault). Waiting for input (a pipe, a FIFO or a terminal
// no one writes to yet) ends with ctx, so that a signal ends it as it ends
// cat: a read(2) the signal handler restarts would wait on past INT and
// TERM.
func ReadFile(ctx context.Context, field, path string, limit int64) ([]byte, error) {
	return readFile(ctx, field, path, limit, false)
}

// readFile is ReadFile, with ReadInput's line.
func readFile(ctx context.Context, field, path string, limit int64, line bool) ([]byte, error) {
	b, err := readPath(ctx, path, limit, line)
	return b, inputError(err, field, path, limit)
}

// inputError is err, or the refusal as bad input named field and shown as
// shown of a directory (errIsDir), input that could not be read (an
// *fs.PathError) or input past limit (errTooLong).
func inputError(err error, field, shown string, limit int64) error {
	switch {
	case errors.Is(err, errIsDir):
		return events.Invalid(field, shown, "is a directory: give a file")
	case errors.As(err, new(*fs.PathError)):
		return events.Invalid(field, shown, "cannot be read: "+ErrText(err))
	}
	return tooLong(err, field, shown, limit)
}

// errIsDir is readFrom's refusal of a directory, which opens for reading
// (standard input too: < DIR) and fails only at its read.
var errIsDir = errors.New("is a directory")

// readPath is readFile with its errors as they came: the open's or the
// read's *fs.PathError, errIsDir, errTooLong, or ctx's cause.
func readPath(ctx context.Context, path string, limit int64, line bool) ([]byte, error) {
	// Opened without waiting for a FIFO's writer: the wait is
	// Waiting's, which a signal ends.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readFrom(ctx, f, limit, line)
}

// readFrom reads f through Waiting to its end, at most limit bytes
// (errTooLong past them; errIsDir for a directory); with line, a terminal
// until its first line ends, without echo (hideTyping).
func readFrom(ctx context.Context, f *os.File, limit int64, line bool) ([]byte, error) {
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return nil, errIsDir
	}
	if !line {
		return readAtMost(Waiting(ctx, f), limit)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	// Asked of the descriptor as it is (f.Fd would make it blocking).
	if err := rc.Control(func(fd uintptr) { line = term.IsTerminal(int(fd)) }); err != nil {
		return nil, err
	}
	if !line {
		return readAtMost(Waiting(ctx, f), limit)
	}
	ctx, quit := context.WithCancelCause(ctx)
	defer quit(nil)
	defer hideTyping(rc, quit)()
	return readAtMost(&toLineEnd{r: Waiting(ctx, f)}, limit)
}

// toLineEnd is r read up to the end of the read that ends its first line:
// a terminal's line, which the terminal gives whole once Enter is typed.
type toLineEnd struct {
	r     io.Reader
	ended bool
}

func (l *toLineEnd) Read(p []byte) (int, error) {
	if l.ended {
		return 0, io.EOF
	}
	n, err := l.r.Read(p)
	l.ended = bytes.IndexByte(p[:n], '\n') >= 0
	return n, err
}

// hideTyping turns off the echo of the terminal rc reads, but for the
// newline that ends a line, and returns what puts its modes back: a secret
// typed there is not left on the screen. A terminal whose modes cannot be
// read or set echoes as it did. Meanwhile each SIGCONT turns the echo off
// again: a job-control shell puts its own modes back (echo on) when Ctrl-Z
// stops the job, and fg continues the job without giving it its modes
// again. And SIGQUIT (Ctrl-\) ends the read through quit, as INT does:
// the runtime's own end, a stack dump and exit 2, left the echo off, and
// the shell took those modes for its own.
func hideTyping(rc syscall.RawConn, quit context.CancelCauseFunc) (restore func()) {
	restore = func() {}
	_ = rc.Control(func(fd uintptr) {
		// Asked for before the echo goes off: a stop that came before
		// the ask would end in a SIGCONT that nothing sees.
		sigs, done := make(chan os.Signal, 1), make(chan struct{})
		signal.Notify(sigs, unix.SIGCONT, unix.SIGQUIT)
		was, err := unix.IoctlGetTermios(int(fd), getTermios)
		if err != nil || hideEcho(int(fd), was) != nil {
			signal.Stop(sigs)
			return
		}
		go func() {
			defer close(done)
			for s := range sigs {
				if s == unix.SIGQUIT {
					quit(&Interrupt{Signal: unix.SIGQUIT})
					continue
				}
				_ = rc.Control(func(fd uintptr) {
					if now, err := unix.IoctlGetTermios(int(fd), getTermios); err == nil && now.Lflag&unix.ECHO != 0 {
						_ = hideEcho(int(fd), now)
					}
				})
			}
		}()
		restore = func() {
			signal.Stop(sigs) // no signal is sent on sigs once it returns
			close(sigs)
			<-done
			_ = rc.Control(func(fd uintptr) { _ = unix.IoctlSetTermios(int(fd), setTermios, was) })
		}
	})
	return restore
}

// hideEcho sets the terminal fd's modes to t's without echo but for the
// newline.
func hideEcho(fd int, t *unix.Termios) error {
	hidden := *t
	hidden.Lflag = hidden.Lflag&^unix.ECHO | unix.ECHONL
	return unix.IoctlSetTermios(fd, setTermios, &hidden)
}

// errTooLong is readAtMost's refusal of input past its limit.
var errTooLong = errors.New("longer than the limit")

// tooLong is err, or the refusal of input named field and shown as shown
// that held more than limit bytes when err is errTooLong.
func tooLong(err error, field, shown string, limit int64) error {
	if errors.Is(err, errTooLong) {
		return events.Invalid(field, shown, fmt.Sprintf("holds more than %d bytes, the most it may hold", limit))
	}
	return err
}

// Waiting is f read so that each wait for input (a pipe, a FIFO or a
// terminal no one writes to yet) is poll(2) rounds that see ctx end, with
// ctx's cause as the read's error: a read(2) the signal handler restarts
// would wait on past INT and TERM. A regular file never waits, and is f
// itself. The descriptor is polled as it is, blocking or not: standard
// input's mode is shared with the process that gave it.
func Waiting(ctx context.Context, f *os.File) io.ReadSeeker {
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		return f
	}
	return &waiting{ctx: ctx, f: f}
}

// waiting is Waiting's reader of a file that may wait.
type waiting struct {
	ctx context.Context
	f   *os.File
}

func (w *waiting) Read(p []byte) (int, error) {
	rc, err := w.f.SyscallConn()
	if err != nil {
		return 0, err
	}
	for {
		var n int
		var perr error
		if err := rc.Control(func(fd uintptr) {
			n, perr = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 100)
		}); err != nil {
			return 0, err
		}
		if w.ctx.Err() != nil {
			return 0, context.Cause(w.ctx)
		}
		switch {
		case errors.Is(perr, unix.EINTR) || (perr == nil && n == 0):
			continue
		case perr != nil:
			return 0, perr
		}
		return w.f.Read(p)
	}
}

// Seek is f's: a pipe's fails, and its reader reads it once.
func (w *waiting) Seek(offset int64, whence int) (int64, error) { return w.f.Seek(offset, whence) }

// readAtMost reads r to its end, at most limit bytes (errTooLong past
// them).
func readAtMost(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit))
	if err != nil || int64(len(b)) < limit {
		return b, err
	}
	if n, err := r.Read(make([]byte, 1)); n > 0 {
		return nil, errTooLong
	} else if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b, nil
}
