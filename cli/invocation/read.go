package invocation

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
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

// ReadInput reads at most limit bytes of the file at path, or of standard
// input when path is "-"; a file that cannot be opened, or a directory, is
// bad input naming field. Waiting for input (a pipe, a FIFO or a terminal no one writes to
// yet) ends with ctx, so that a signal ends it as it ends cat: a read(2)
// the signal handler restarts would wait on past INT and TERM. With
// line, for input of which only the first line is read (a secret), a
// terminal is read until that line ends: typed, it ends with Enter, not
// with Ctrl-D; and it is typed unseen, as a password is.
func (g *Globals) ReadInput(ctx context.Context, field, path string, limit int64, line bool) ([]byte, error) {
	in, ok := g.IO.In.(*os.File)
	if path != "-" {
		// Opened without waiting for a FIFO's writer: the wait is
		// readUntil's, which a signal ends.
		f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return nil, events.Invalid(field, path, "cannot be read: "+ErrText(err))
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.IsDir() {
			return nil, events.Invalid(field, path, "is a directory: give a file")
		}
		in, ok = f, true
	}
	if !ok {
		return io.ReadAll(io.LimitReader(g.IO.In, limit))
	}
	return readUntil(ctx, in, limit, line)
}

// readUntil reads f to its end, at most limit bytes, waiting for each part
// in poll(2) rounds that see ctx end. A regular file never waits. The
// descriptor is polled as it is, blocking or not: standard input's mode is
// shared with the process that gave it. With line, a terminal is read
// until its first line ends, without echo (hideTyping).
func readUntil(ctx context.Context, f *os.File, limit int64, line bool) ([]byte, error) {
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		return io.ReadAll(io.LimitReader(f, limit))
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	if line {
		// Asked of the descriptor as it is (f.Fd would make it blocking).
		if err := rc.Control(func(fd uintptr) { line = term.IsTerminal(int(fd)) }); err != nil {
			return nil, err
		}
	}
	if line {
		defer hideTyping(rc)()
	}
	var b []byte
	part := make([]byte, 4096)
	for int64(len(b)) < limit {
		var n int
		var perr error
		if err := rc.Control(func(fd uintptr) {
			n, perr = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 100)
		}); err != nil {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		switch {
		case errors.Is(perr, unix.EINTR) || (perr == nil && n == 0):
			continue
		case perr != nil:
			return nil, perr
		}
		m, err := f.Read(part[:min(int64(len(part)), limit-int64(len(b)))])
		b = append(b, part[:m]...)
		if errors.Is(err, io.EOF) || line && bytes.IndexByte(part[:m], '\n') >= 0 {
			break
		} else if err != nil {
			return nil, err
		}
	}
	return b, nil
}

// hideTyping turns off the echo of the terminal rc reads, but for the
// newline that ends a line, and returns what puts its modes back: a secret
// typed there is not left on the screen. A terminal whose modes cannot be
// read or set echoes as it did.
func hideTyping(rc syscall.RawConn) (restore func()) {
	restore = func() {}
	_ = rc.Control(func(fd uintptr) {
		was, err := unix.IoctlGetTermios(int(fd), getTermios)
		if err != nil {
			return
		}
		hidden := *was
		hidden.Lflag = hidden.Lflag&^unix.ECHO | unix.ECHONL
		if unix.IoctlSetTermios(int(fd), setTermios, &hidden) == nil {
			restore = func() { _ = rc.Control(func(fd uintptr) { _ = unix.IoctlSetTermios(int(fd), setTermios, was) }) }
		}
	})
	return restore
}
