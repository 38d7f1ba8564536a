package trust

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestAHeadAsideIsPutBackOnlyOnceItsRunIsGone: a head Drop moved aside
// stays aside while its run holds it, whoever looks at the heads (a reader
// of the same process too); once the run is gone without settling it (its
// file closed, as a kill closes it), the next look puts it back.
func TestAHeadAsideIsPutBackOnlyOnceItsRunIsGone(t *testing.T) {
	h := Heads{Dir: t.TempDir(), Root: "/srv/root"}
	const id = "0ed45c8f76393ef83edb5837f483c44b"
	want := []byte("a signed head\n")
	if err := os.WriteFile(h.Path(id), want, 0o600); err != nil {
		t.Fatal(err)
	}
	dropped, err := h.DropAll(id)
	if err != nil || len(dropped) != 1 {
		t.Fatalf("DropAll: %v, %d dropped", err, len(dropped))
	}
	if p := h.Kept(id); p != "" {
		t.Fatalf("a look while the run goes on put the head back: %s", p)
	}
	dropped[0].f.Close() // the run is gone
	if p := h.Kept(id); p != h.Path(id) {
		t.Fatalf("the head of a run gone is not put back: Kept %q", p)
	}
	if b, err := os.ReadFile(h.Path(id)); err != nil || !bytes.Equal(b, want) {
		t.Fatalf("the head put back: %q, %v", b, err)
	}
	if left, _ := filepath.Glob(filepath.Join(h.Dir, ".*.dropped")); len(left) > 0 {
		t.Fatalf("left aside: %v", left)
	}
}

// TestASecondDropWhileTheFirstRunHoldsTheHeadIsRefused: a second run that
// moves the heads aside while the first still holds its head aside is
// told another run is going on, not that there is no head: it would go on
// unguarded, and the first run, failing, puts back a head of the old log
// under the second's recorded rollback.
func TestASecondDropWhileTheFirstRunHoldsTheHeadIsRefused(t *testing.T) {
	h := Heads{Dir: t.TempDir(), Root: "/srv/root"}
	const id = "0ed45c8f76393ef83edb5837f483c44b"
	if err := os.WriteFile(h.Path(id), []byte("a signed head\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	first, err := h.DropAll(id)
	if err != nil || len(first) != 1 {
		t.Fatalf("DropAll: %v, %d dropped", err, len(first))
	}
	second, err := Drop(h.Path(id)) // its own open file: flock tells them apart
	if err == nil {
		t.Fatalf("a second Drop while the first run holds the head aside: %v, no error", second)
	}
	if err := first[0].Settle(false); err != nil {
		t.Fatal(err)
	}
	if p := h.Kept(id); p != h.Path(id) {
		t.Fatalf("the head the first run put back: Kept %q", p)
	}
}
