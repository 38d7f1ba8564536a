package witness

import (
	"os"
	"testing"
)

func TestHeadsKeepsOnlyTheLargestHeadSignedByTheKey(t *testing.T) {
	mine, v := signer(t, "ops")
	h := Heads{Dir: t.TempDir()}
	for _, c := range []struct {
		size int64
		kept bool
	}{{3, true}, {5, true}, {4, false}, {5, true}, {9, true}} {
		where, err := h.Store(id, c.size, signed(t, mine, id, c.size), v)
		if err != nil || (where != "") != c.kept {
			t.Fatalf("Store(%d): %q, %v; want kept %v", c.size, where, err, c.kept)
		}
	}
	last, err := h.Last(id, v)
	if err != nil || last == nil || last.Size != 9 {
		t.Fatalf("Last: %+v, %v; want size 9", last, err)
	}
	if _, err := h.Store("../escape", 1, signed(t, mine, "../escape", 1), v); err == nil {
		t.Fatal("a ledger id naming another directory was stored")
	}
	ents, err := os.ReadDir(h.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != id+".checkpoint" && e.Name() != id+".lock" && e.Name() != "."+id+".spare" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}
