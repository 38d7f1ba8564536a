package e2e

// The Go API's default is the command line's: ledger.Open signs with the
// user's key from the trust store, keeps the signed head there and pins
// the ledger on first use, saying so once.

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/lease"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/trust"
)

// goAPIStore points trust.Dir at a store of the test's own, found the way
// a user's is ($XDG_CONFIG_HOME/lockledger), and returns its directory.
func goAPIStore(t *testing.T) string {
	t.Helper()
	xdg := t.TempDir()
	t.Setenv(trust.EnvDir, "")
	t.Setenv("XDG_CONFIG_HOME", xdg)
	return filepath.Join(xdg, "lockledger")
}

// goAPICycle opens root with the Go API's defaults (and log), acquires and
// releases a lock through a lease, and closes it.
func goAPICycle(t *testing.T, root string, log *slog.Logger) string {
	t.Helper()
	ctx := context.Background()
	l, err := ledger.Open(ctx, root, ledger.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, err := lease.Acquire(ctx, l, ledger.AcquireRequest{Lock: "nightly-etl", Identity: ledger.Identity{Actor: "etl"}, TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, lease.Result{Result: "success"}); err != nil {
		t.Fatal(err)
	}
	return l.ID()
}

// TestGoAPISignsByDefault: a service that opens a fresh root with
// ledger.Open and no signing option writes what the command line writes:
// signed checkpoints in the ledger, the pin and the kept head in the
// user's trust store, the first-use pin said once at Warn; the command
// line's plain verify then checks the root against that store and passes.
func TestGoAPISignsByDefault(t *testing.T) {
	store := goAPIStore(t)
	root := filepath.Join(t.TempDir(), "root")
	var log bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelWarn}))
	id := goAPICycle(t, root, logger)

	var n int
	if err := clitest.DB(t, root).QueryRow(`SELECT count(*) FROM checkpoints`).Scan(&n); err != nil || n == 0 {
		t.Fatalf("the Go API's writes left %d signed checkpoints (%v), want one per write", n, err)
	}
	s, err := trust.Open(store, root)
	if err != nil {
		t.Fatal(err)
	}
	pins, err := s.PinsOf(root)
	if err != nil || len(pins) != 1 || pins[0].LedgerID != id {
		t.Fatalf("the trust store's pins of %s: %+v, %v; want ledger %s pinned once", root, pins, err, id)
	}
	head := trust.Heads{Dir: s.HeadsDir(), Root: trust.Resolve(root)}.Path(id)
	if _, err := os.Stat(head); err != nil {
		t.Fatalf("no signed head kept in the trust store: %v", err)
	}
	if got := strings.Count(log.String(), "on first use: pinned in"); got != 1 || !strings.Contains(log.String(), "level=WARN") ||
		!strings.Contains(log.String(), id) || !strings.Contains(log.String(), pins[0].Verifier) {
		t.Fatalf("the first-use pin was logged %d times, want once at Warn with the id and key:\n%s", got, log.String())
	}
	log.Reset()
	goAPICycle(t, root, logger)
	if strings.Contains(log.String(), "first use") {
		t.Fatalf("a second open said the pin again:\n%s", log.String())
	}

	r := clitest.RunWith(t, root, []string{trust.EnvDir + "=" + store}, "", "verify", "--json")
	v := clitest.DecodeVerify(t, r)
	if r.Code != 0 || !v.OK || !strings.Contains(v.Trust, "match checkpoint "+head) || v.Warning != "" {
		t.Fatalf("the CLI's verify of the Go API's root: exit %d, ok %v, trust %q, warning %q\n%s", r.Code, v.OK, v.Trust, v.Warning, r.Stderr)
	}
}

// TestGoAPIRefusesASwappedLedger: a root whose pin in the trust store
// names another ledger (the one written there was replaced by a new one)
// is refused by the Go API's open with the typed error, before any write.
func TestGoAPIRefusesASwappedLedger(t *testing.T) {
	store := goAPIStore(t)
	root := filepath.Join(t.TempDir(), "root")
	first := goAPICycle(t, root, slog.New(slog.DiscardHandler))
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	// Another ledger at the same path, made without the trust store.
	other, err := ledger.Open(context.Background(), root, ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	second := other.ID()
	other.Close()

	l, err := ledger.Open(context.Background(), root)
	if err == nil {
		l.Close()
	}
	var pe *trust.PinError
	if !errors.Is(err, ledger.ErrPinned) || !errors.As(err, &pe) || pe.Pinned != first || pe.Found != second {
		t.Fatalf("Go API open of a root whose pin names ledger %s, holding %s: %v; want ledger.ErrPinned naming both", first, second, err)
	}
	if s, err := trust.Open(store, root); err != nil {
		t.Fatal(err)
	} else if pins, _ := s.PinsOf(root); len(pins) != 1 || pins[0].LedgerID != first {
		t.Fatalf("the refused open changed the pins: %+v", pins)
	}
}

// TestFirstUsePinIsSaidEvenWhenQuiet: trusting a ledger on first use is a
// security event: `acquire -q` on a fresh root says it, once, with the id
// and key it pinned; the next `acquire -q` says nothing.
func TestFirstUsePinIsSaidEvenWhenQuiet(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "root")
	first := clitest.Must(t, 0, root, "acquire", "-q", "a")
	id := ledgerID(t, root)
	key := clitest.Must(t, 0, root, "trust", "show", "--json").Stdout
	if n := strings.Count(first.Stderr, "on first use: pinned in"); n != 1 || !strings.Contains(first.Stderr, id) {
		t.Fatalf("acquire -q on a fresh root said the first-use pin %d times, want once naming ledger %s:\n%s", n, id, first.Stderr)
	}
	for _, line := range strings.Split(strings.TrimSpace(first.Stderr), "\n") {
		if f := strings.Fields(line); len(f) > 0 && !strings.Contains(key, f[len(f)-1]) {
			t.Errorf("the pin line does not end with the key `trust show` prints: %q\n%s", line, key)
		}
	}
	if second := clitest.Must(t, 0, root, "acquire", "-q", "b"); second.Stderr != "" {
		t.Fatalf("a second acquire -q printed:\n%s", second.Stderr)
	}
}
