package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockledger/lockledger/ledger"
)

// TestKeptLedgerIsReusedUntilItsDescriptionChanges: a kept ledger is
// generated once and reused; another size, generator version or schema is
// another ledger, generated anew; an interrupted generation is not taken
// for a kept ledger; and what is kept verifies where it was moved to.
func TestKeptLedgerIsReusedUntilItsDescriptionChanges(t *testing.T) {
	cache := t.TempDir()
	spec := yearSpec(300)
	keepOnce := func(s ledgerSpec, wantGenerated bool) (string, keptInfo) {
		t.Helper()
		root, info, generated, err := keepLedger(cache, s)
		if err != nil {
			t.Fatal(err)
		}
		if generated != wantGenerated {
			t.Fatalf("%s: generated %v, want %v", s.key(), generated, wantGenerated)
		}
		if info.Spec != s {
			t.Fatalf("kept %+v, asked for %+v", info.Spec, s)
		}
		return root, info
	}
	root, first := keepOnce(spec, true)
	if again, second := keepOnce(spec, false); again != root || !second.Generated.Equal(first.Generated) {
		t.Errorf("the second run got %s generated %v, the first %s generated %v", again, second.Generated, root, first.Generated)
	}
	bigger := spec
	bigger.Events++
	newer := spec
	newer.Generator++
	migrated := spec
	migrated.Schema++
	for _, s := range []ledgerSpec{bigger, newer, migrated} {
		if r, _ := keepOnce(s, true); r == root {
			t.Errorf("%+v kept at the same root as %+v", s, spec)
		}
	}
	// A generation that stopped half way leaves a partial directory only.
	cut := spec
	cut.Locks++
	if err := os.MkdirAll(filepath.Join(cache, cut.key()+".partial", "root"), 0o755); err != nil {
		t.Fatal(err)
	}
	keepOnce(cut, true)

	l, err := ledger.Open(context.Background(), root, ledger.MustExist(), ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rep, err := l.Verify(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK {
		t.Errorf("the kept ledger does not verify: %+v", rep.Problems)
	}
}
