package witness

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/testkeys"
	"github.com/lockledger/lockledger/store"
	"github.com/lockledger/lockledger/trust"
)

const id = "0123456789abcdef"

var at = time.Date(2026, 11, 25, 10, 0, 0, 123456789, time.UTC)

func TestPublishAppendsToAFileAndAddsOneFileToADirectory(t *testing.T) {
	dir := t.TempDir()
	file, wdir := filepath.Join(dir, "witness.log"), filepath.Join(dir, "witness.d")
	if err := os.Mkdir(wdir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := New([]string{file, wdir}, time.Minute, nil)
	defer p.Wait()
	ctx := context.Background()
	s, _, _ := testkeys.Signer(t, "ops")
	one, two := testkeys.Signed(t, s, id, 1, at), testkeys.Signed(t, s, id, 2, at)
	for size, note := range map[int64]string{1: one, 2: two} {
		written, err := p.Publish(ctx, id, size, at, note)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{file, filepath.Join(wdir, FileName(id, size, at))}
		if !slices.Equal(written, want) {
			t.Fatalf("written %v, want %v", written, want)
		}
		b, err := os.ReadFile(want[1])
		if err != nil || string(b) != note {
			t.Fatalf("%s holds %q (%v), want %q", want[1], b, err, note)
		}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); s != one+two && s != two+one {
		t.Fatalf("the witness file holds %q, want both notes appended", s)
	}
	// A directory never has a file replaced: the same checkpoint again is refused there.
	written, err := p.Publish(ctx, id, 1, at, "again\n")
	var we *Error
	if !errors.As(err, &we) || we.Path != wdir || !errors.Is(err, fs.ErrExist) || !slices.Equal(written, []string{file}) {
		t.Fatalf("publishing a checkpoint twice: written %v, %v; want the directory refused as a *Error, the file written", written, err)
	}
	if b, _ := os.ReadFile(filepath.Join(wdir, FileName(id, 1, at))); string(b) != one {
		t.Fatalf("the directory's file was changed to %q", b)
	}
}

func TestPublishTriesEveryWitnessAndReportsTheFirstFailure(t *testing.T) {
	dir := t.TempDir()
	missing, good, fifo := filepath.Join(dir, "missing", "witness"), filepath.Join(dir, "good"), filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	p := New([]string{missing, fifo, good}, time.Minute, nil)
	defer p.Wait()
	written, err := p.Publish(context.Background(), id, 1, at, "note\n")
	var we *Error
	if !errors.As(err, &we) || we.Path != missing || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Publish: %v, want a *Error for %s", err, missing)
	}
	if !slices.Equal(written, []string{good}) {
		t.Fatalf("written %v, want only %s", written, good)
	}
	if b, err := os.ReadFile(good); err != nil || string(b) != "note\n" {
		t.Fatalf("%s holds %q (%v)", good, b, err)
	}
}

// A FIFO would block the open (nobody reads it) or take the checkpoint
// nowhere durable (someone does): it is refused for its kind either way.
func TestAFIFOWitnessIsRefused(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "witness")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	p := New([]string{fifo}, time.Minute, nil)
	defer p.Wait()
	for _, reader := range []bool{false, true} {
		t.Run(map[bool]string{false: "unread", true: "read"}[reader], func(t *testing.T) {
			if reader {
				r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
			}
			_, err := p.Publish(context.Background(), id, 1, at, "note\n")
			var we *Error
			if !errors.As(err, &we) || we.Path != fifo || !errors.Is(err, trust.ErrKind) {
				t.Fatalf("Publish to a FIFO: %v, want a *Error for trust.ErrKind", err)
			}
		})
	}
}

func TestNoWitnessesPublishNothing(t *testing.T) {
	p := New(nil, 0, nil)
	written, err := p.Publish(context.Background(), id, 1, at, "note\n")
	if err != nil || written != nil {
		t.Fatalf("Publish to no witness: %v, %v", written, err)
	}
	p.Wait()
}

func TestAfterCommitQuietlyWarnsOfAFailedWitness(t *testing.T) {
	var buf bytes.Buffer
	missing := filepath.Join(t.TempDir(), "missing", "witness")
	p := New([]string{missing}, time.Minute, slog.New(slog.NewTextHandler(&buf, nil)))
	written, cs, err := p.AfterCommit(context.Background(), id, 7, at, "note\n", store.Witnessed{}, true)
	p.Wait()
	if len(written) != 0 || len(cs) != 0 || err != nil {
		t.Fatalf("AfterCommit, quiet, to a missing witness: %v, %v, %v; want nothing, the failure logged", written, cs, err)
	}
	if s := buf.String(); !strings.Contains(s, "level=WARN") || !strings.Contains(s, "size=7") || !strings.Contains(s, missing) {
		t.Fatalf("the warning logged: %q", s)
	}
}

// Wait returns as soon as the copies are done, not after the timeout.
func TestWaitReturnsOnceTheCopiesAreDone(t *testing.T) {
	p := New([]string{filepath.Join(t.TempDir(), "witness")}, time.Hour, nil)
	if _, err := p.Publish(context.Background(), id, 1, at, "note\n"); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		p.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Wait still waits 30s after the copies were done")
	}
}

func TestFileNamesSortBySizeThenTime(t *testing.T) {
	names := []string{
		FileName(id, 10, at),
		FileName(id, 9, at.Add(time.Hour)),
		FileName(id, 9, at.Add(time.Nanosecond)),
		FileName(id, 9, at),
	}
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	if want := []string{names[3], names[2], names[1], names[0]}; !slices.Equal(sorted, want) {
		t.Fatalf("sorted %v, want %v", sorted, want)
	}
	if n := FileName(id, 9, at); n != id+"-000000000009-20261125T100000123456789Z.checkpoint" {
		t.Fatalf("FileName %s", n)
	}
}

// TestANoteIsAppendedWhileAReaderHoldsTheWitnessFilesLock: anyone who can
// open a witness file (0644: every user of the host, a reader of another
// uid too) can hold its flock for as long as they like; a note waits a
// while for it, then is appended as on a file system without locks,
// instead of every note failing for as long as the lock is held.
func TestANoteIsAppendedWhileAReaderHoldsTheWitnessFilesLock(t *testing.T) {
	file := filepath.Join(t.TempDir(), "witness.log")
	s, _, _ := testkeys.Signer(t, "ops")
	one, two := testkeys.Signed(t, s, id, 1, at), testkeys.Signed(t, s, id, 2, at)
	if err := os.WriteFile(file, []byte(one), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := syscall.Flock(int(r.Fd()), syscall.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	p := New([]string{file}, time.Minute, nil)
	defer p.Wait()
	start := time.Now()
	if _, err := p.Publish(context.Background(), id, 2, at, two); err != nil {
		t.Fatalf("a note to a witness file whose lock a reader holds: %v", err)
	}
	if took := time.Since(start); took > appendWait+5*time.Second {
		t.Errorf("the note took %v, its wait for the lock being %v", took, appendWait)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != one+two {
		t.Fatalf("the witness file holds %q (%v), want both notes", b, err)
	}
}
