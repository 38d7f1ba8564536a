package ledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/store"
	"github.com/lockledger/lockledger/trust"
	"github.com/lockledger/lockledger/witness"
)

func testKey(t *testing.T) (note.Signer, note.Verifier) {
	t.Helper()
	sk, vk, err := checkpoint.GenerateKey("ops")
	if err != nil {
		t.Fatal(err)
	}
	s, err := checkpoint.NewSigner(sk)
	if err != nil {
		t.Fatal(err)
	}
	v, err := checkpoint.NewVerifier(vk)
	if err != nil {
		t.Fatal(err)
	}
	return s, v
}

// storedCheckpoints opens every stored checkpoint with v and checks it
// against the tree; it returns their sizes.
func storedCheckpoints(t *testing.T, l *Ledger, v note.Verifier) []int64 {
	t.Helper()
	rows, err := pgtest.Open(t, l.Source()).Query(`SELECT size, root, note, key_name FROM checkpoints ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var sizes []int64
	for rows.Next() {
		var size int64
		var root, msg, key string
		if err := rows.Scan(&size, &root, &msg, &key); err != nil {
			t.Fatal(err)
		}
		c, err := checkpoint.Open([]byte(msg), v)
		if err != nil {
			t.Fatal(err)
		}
		want, err := tlog.TreeHash(size, store.TreeReader(context.Background(), pgtest.Open(t, l.Source())))
		if err != nil {
			t.Fatal(err)
		}
		if c.Size != size || c.Root != want || c.Root.String() != root || key != "ops" || c.Origin != checkpoint.Origin(l.ID()) {
			t.Fatalf("stored checkpoint %d: %+v, columns %s %s", size, c, root, key)
		}
		sizes = append(sizes, size)
	}
	return sizes
}

func cycle(t *testing.T, l *Ledger, lock, rid string) {
	t.Helper()
	ctx := context.Background()
	if _, err := l.TryAcquire(ctx, req(lock, rid, 100)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Release(ctx, ReleaseRequest{Lock: lock, Identity: Identity{RequestID: rid, Actor: "t", PID: 100}}); err != nil {
		t.Fatal(err)
	}
}

func TestWriterWithAKeySignsCheckpointsEveryNEventsAndAfterT(t *testing.T) {
	t.Parallel()
	s, v := testKey(t)
	dir := t.TempDir()
	file, wdir := filepath.Join(dir, "witness.log"), filepath.Join(dir, "witness.d")
	if err := os.Mkdir(wdir, 0o700); err != nil {
		t.Fatal(err)
	}
	e := open(t, WithSigner(s), WithWitnesses(witness.New([]string{file, wdir}, 0, nil)), WithCheckpointPolicy(4, time.Hour))
	for i := range 5 {
		cycle(t, e.l, "a", fmt.Sprintf("r%d", i))
		awaitPublished(t, e.l) // each checkpoint, not only the latest waiting
	}
	// The first write finds no checkpoint; then every 4 events.
	if got := storedCheckpoints(t, e.l, v); fmt.Sprint(got) != "[1 5 9]" {
		t.Fatalf("checkpoints at %v, want [1 5 9]", got)
	}
	// An hour later the next write signs, whatever the count.
	e.clock.Add(time.Hour)
	if _, err := e.l.TryAcquire(context.Background(), req("a", "late", 100)); err != nil {
		t.Fatal(err)
	}
	awaitPublished(t, e.l)
	if got := storedCheckpoints(t, e.l, v); fmt.Sprint(got) != "[1 5 9 11]" {
		t.Fatalf("checkpoints at %v, want [1 5 9 11]", got)
	}
	// Each went to both witnesses: appended to the file, one file each in
	// the directory.
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var fromFile []int64
	for _, en := range checkpoint.SplitNotes(data) {
		c, err := checkpoint.Open(en.Note, v)
		if err != nil {
			t.Fatal(err)
		}
		fromFile = append(fromFile, c.Size)
	}
	names, err := filepath.Glob(filepath.Join(wdir, "*.checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	var fromDir []int64
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		c, err := checkpoint.Open(b, v)
		if err != nil {
			t.Fatal(err)
		}
		fromDir = append(fromDir, c.Size)
	}
	if fmt.Sprint(fromFile) != "[1 5 9 11]" || fmt.Sprint(fromDir) != "[1 5 9 11]" {
		t.Fatalf("witness file %v, directory %v", fromFile, fromDir)
	}
}

func TestCheckpointSignsNowAndReportsAWitnessItCouldNotWrite(t *testing.T) {
	t.Parallel()
	s, v := testKey(t)
	bad := filepath.Join(t.TempDir(), "missing-dir", "witness")
	e := open(t, WithSigner(s), WithWitnesses(witness.New([]string{bad}, 0, nil)), WithCheckpointPolicy(1000, time.Hour))
	cycle(t, e.l, "a", "r") // the first write's checkpoint, size 1, fails quietly to reach the witness
	cp, err := e.l.Checkpoint(context.Background())
	var we *witness.Error
	if !errors.As(err, &we) || we.Path != bad {
		t.Fatalf("Checkpoint with an unwritable witness: %v", err)
	}
	if cp == nil || cp.Size != 2 {
		t.Fatalf("checkpoint %+v", cp)
	}
	if got := storedCheckpoints(t, e.l, v); fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("stored %v, want [1 2]", got)
	}

	plain := open(t)
	if _, err := plain.l.Checkpoint(context.Background()); !errors.Is(err, ErrNoSigner) {
		t.Fatalf("Checkpoint without a key: %v", err)
	}
}

// The audit events (export, verify) sign the checkpoint that is due, like
// any other write: otherwise they are covered by no checkpoint and verify
// fails on a clean ledger.
func TestRecordAccessSignsTheCheckpointThatIsDue(t *testing.T) {
	t.Parallel()
	s, v := testKey(t)
	e := open(t, WithSigner(s), WithCheckpointPolicy(1, time.Hour))
	ctx := context.Background()
	if _, err := e.l.TryAcquire(ctx, req("a", "r", 100)); err != nil {
		t.Fatal(err)
	}
	seq, err := e.l.RecordAccess(ctx, events.LedgerVerified, Identity{}, &events.Verified{Result: events.AuditOK})
	if err != nil {
		t.Fatal(err)
	}
	if got := storedCheckpoints(t, e.l, v); len(got) != 2 || got[1] != seq {
		t.Fatalf("checkpoints %v after the audit event seq %d, want one of size %d", got, seq, seq)
	}
}

// A witness that would block (a FIFO nobody reads) is refused up front,
// and the copy is made after the writer mutex is let go: another writer on
// the root goes on, and the checkpoint stays stored in the ledger.
func TestAHungWitnessBlocksNoWriter(t *testing.T) {
	t.Parallel()
	s, v := testKey(t)
	fifo := filepath.Join(t.TempDir(), "witness")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	e := open(t, WithSigner(s), WithWitnesses(witness.New([]string{fifo}, 0, nil)), WithCheckpointPolicy(1, time.Hour))
	ctx := context.Background()
	first := make(chan error, 1)
	go func() {
		_, err := e.l.TryAcquire(ctx, req("a", "r", 100))
		first <- err
	}()
	t.Cleanup(func() {
		// A writer that opened the FIFO to write would sit in open(fifo)
		// for ever: a reader lets it go, so a failing test still ends.
		if r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			defer r.Close()
		}
		<-first
	})
	other, err := Open(ctx, e.root, WithBusyTimeout(3*time.Second), WithProcessProbe(e.probe),
		WithHost(Host{ID: "host-a", BootID: "boot-1"}), Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	// Wait until the first writer committed lock_acquired a.
	for count(t, other) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := other.TryAcquire(ctx, req("b", "r2", 100)); err != nil {
		t.Fatalf("a second writer while the first publishes to a FIFO: %v", err)
	}
	if got := storedCheckpoints(t, other, v); len(got) == 0 || got[0] != 1 {
		t.Fatalf("checkpoints %v, want the one of size 1 stored", got)
	}
	var werr *witness.Error
	cp, err := e.l.Checkpoint(ctx)
	if !errors.As(err, &werr) || !errors.Is(err, trust.ErrKind) || cp == nil {
		t.Fatalf("checkpoint to a FIFO witness: %v, want a witness.Error for its kind", err)
	}
}
