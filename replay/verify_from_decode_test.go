package replay

import (
	"strings"
	"testing"
)

// A kept head's fold is decoded once per verify from it: the checks of
// its caller and of Verify decode it the first time only, and the verify
// takes that fold (once: it folds on from it) rather than decoding it a
// third time. A head whose state is set again since is decoded again, and
// so is a copy of one whose fold was taken.
func TestAKeptHeadIsDecodedOncePerVerify(t *testing.T) {
	st := NewState()
	st.Seq = 3
	state, err := st.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	v := &Verified{LedgerID: "l", Seq: 3, Hash: "h", Frontier: []string{strings.Repeat("ab", 32)}, MaxAt: "m", BlockMinAt: "b", State: state}
	if err := v.Check(); err != nil {
		t.Fatal(err)
	}
	first := v.decoded
	if first == nil || first.st == nil || first.st.Seq != 3 {
		t.Fatalf("Check kept no fold: %+v", first)
	}
	if err := v.Check(); err != nil || v.decoded != first {
		t.Fatalf("a second Check decoded the fold again (%v)", err)
	}
	edited := *v
	edited.State = []byte(`{"seq":1}`)
	if err := edited.Check(); err == nil {
		t.Fatal("a head whose state was set again since Check was not decoded again")
	}
	copied := *v
	fold := first.st
	got, frontier, err := v.take()
	if err != nil || got != fold || len(frontier) != 1 {
		t.Fatalf("take: %v, %d hashes (%v), want the fold Check decoded", got, len(frontier), err)
	}
	if v.decoded != nil || first.st != nil {
		t.Fatal("the fold taken is still kept for another verify")
	}
	again, _, err := copied.take()
	if err != nil || again == nil || again == got || again.Seq != 3 {
		t.Fatalf("a copy whose fold was taken: %v (%v), want a fold decoded again", again, err)
	}
}
