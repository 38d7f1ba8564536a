package ledger_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/lockledger/lockledger/archive"
	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/store"
)

// TestConformanceAPrunedLedgerRestoredPastThePinGoesOnFromItsArchive: a
// pruned ledger that a host's pin is ahead of (restored from a backup) is
// refused by writers; project --accept-rollback alone cannot replay it
// (the archived events are not in the live log), and with the archive the
// prune recorded it can: it rebuilds the projections from archive and live
// log, records the rollback, the ledger stays pruned and the host writes
// again. Wrong archives change nothing.
func TestConformanceAPrunedLedgerRestoredPastThePinGoesOnFromItsArchive(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, f *storeFixture) {
		ctx := context.Background()
		sk, vk, err := checkpoint.GenerateKey("ops")
		if err != nil {
			t.Fatal(err)
		}
		signer, err := checkpoint.NewSigner(sk)
		if err != nil {
			t.Fatal(err)
		}
		verifier, err := checkpoint.NewVerifier(vk)
		if err != nil {
			t.Fatal(err)
		}
		signed := []ledger.Option{ledger.WithSigner(signer), ledger.WithCheckpointPolicy(1, time.Hour)}
		l := f.open("web", signed...)
		root := l.Root()
		// kept is held from an event the prune archives: only the archive
		// says who holds it.
		if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "kept", Identity: ledger.Identity{Actor: "ops"}}); err != nil {
			t.Fatal(err)
		}
		cycles(t, l, 3)
		path, c := archiveAndPrune(t, l, verifier)
		cycles(t, l, 1)
		head := headSeq(t, l)
		l.Close()

		// The restore: this host has seen a head past the database's.
		pin := fmt.Sprintf("%s %d %s\n", l.ID(), head+5, "0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f")
		if err := os.WriteFile(filepath.Join(root, "ledger.pin"), []byte(pin), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := f.openAt(root, signed...); !errors.Is(err, store.ErrRolledBack) {
			t.Fatalf("a writer on the restored ledger: %v, want ErrRolledBack", err)
		}
		accept := f.mustOpenAt(root, append(signed, ledger.WithPin(store.PinAccept))...)
		if _, err := accept.Project(ctx); !errors.Is(err, store.ErrPruned) {
			t.Fatalf("project --accept-rollback of the pruned ledger without its archive: %v, want ErrPruned", err)
		}
		// Wrong archives are the caller's mistake: refused, nothing recorded.
		for what, archives := range map[string][]*archive.Checked{"the archive twice": {c, c}} {
			if _, err := accept.Project(ctx, ledger.ProjectFromArchives(archives...)); !errors.Is(err, archive.ErrMismatch) {
				t.Fatalf("project with %s: %v, want ErrMismatch", what, err)
			}
		}
		if n := headSeq(t, accept); n != head {
			t.Fatalf("the refused runs moved the head from seq %d to %d", head, n)
		}
		rep, err := accept.Project(ctx, ledger.ProjectFromArchives(c))
		if err != nil {
			t.Fatalf("project --accept-rollback --archive %s: %v", path, err)
		}
		if rep.RollbackAccepted == nil || rep.RollbackAccepted.Seq != head+5 {
			t.Errorf("the run does not report the pin it gave up: %+v", rep.RollbackAccepted)
		}
		if rep.Events != head {
			t.Errorf("project from archive and live log replayed %d events, want the %d the archive and the live log hold", rep.Events, head)
		}
		if rep.Held != 1 || rep.Locks != 2 || rep.Changed() {
			t.Errorf("project from archive and live log: %d locks, %d held, changes %+v %+v; want 2 locks, kept held, nothing to change",
				rep.Locks, rep.Held, rep.Rows, rep.Files)
		}
		accept.Close()

		// The root pins the ledger found; it stays pruned.
		l = f.mustOpenAt(root, signed...)
		if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "after", Identity: ledger.Identity{Actor: "ops"}}); err != nil {
			t.Fatalf("a write after the rollback was accepted: %v", err)
		}
		if _, err := l.Project(ctx); !errors.Is(err, store.ErrPruned) {
			t.Errorf("the ledger after the run: project without the archive %v, want ErrPruned (still pruned)", err)
		}
	})
}

// openAt opens the fixture's ledger as host web with root as its root
// (the one an earlier open of web had: its pin), as fixture.Open does.
func (f *storeFixture) openAt(root string, opts ...ledger.Option) (*ledger.Ledger, error) {
	opts = append(opts, ledger.WithHost(ledger.Host{ID: "web", BootID: "boot-web"}), ledger.Unsigned())
	if f.url != "" {
		opts = append(opts, ledger.WithDatabase(f.url))
	}
	l, err := ledger.Open(context.Background(), root, opts...)
	if err == nil {
		f.t.Cleanup(func() { l.Close() })
	}
	return l, err
}

func (f *storeFixture) mustOpenAt(root string, opts ...ledger.Option) *ledger.Ledger {
	f.t.Helper()
	l, err := f.openAt(root, opts...)
	if err != nil {
		f.t.Fatal(err)
	}
	return l
}

// archiveAndPrune archives l's events below its largest checkpoint
// boundary short of the head into a file and prunes them; it returns the
// file and the archive as checked.
func archiveAndPrune(t *testing.T, l *ledger.Ledger, v note.Verifier) (string, *archive.Checked) {
	t.Helper()
	ctx := context.Background()
	tx, err := l.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	below, err := archive.Boundary(ctx, tx, 0, time.Now().Add(time.Hour))
	if err != nil {
		tx.Rollback()
		t.Fatal(err)
	}
	var buf bytes.Buffer
	_, err = archive.Write(ctx, tx, &buf, below)
	tx.Rollback()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "archive.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := archive.Read(bytes.NewReader(buf.Bytes()), path, "", replay.WithTrust(&replay.Trust{Verifiers: []note.Verifier{v}, Expected: true}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Prune(ctx, ledger.Identity{Actor: "ops"}, c, path); err != nil {
		t.Fatal(err)
	}
	return path, c
}

// headSeq is l's last event's seq.
func headSeq(t *testing.T, l *ledger.Ledger) int64 {
	t.Helper()
	tx, err := l.BeginRead(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var n int64
	if err := tx.QueryRow(`SELECT coalesce(max(seq), 0) FROM events`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
