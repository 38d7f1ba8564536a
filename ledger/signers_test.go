package ledger

import (
	"context"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/internal/testkeys"
	"github.com/lockledger/lockledger/replay"
)

// A host whose key the ledger's signers do not register only appends: it
// stores no checkpoint (so no promise it could not keep while idle), and
// verify passes for it and for the owner after the others write on. The
// hosts trust the owner's key, as each pins it.
func TestUnregisteredWriterStoresNoCheckpoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	so, vo, _ := testkeys.Signer(t, "owner")
	sh, vh, vkh := testkeys.Signer(t, "host")
	ss, vs, _ := testkeys.Signer(t, "stray")
	const every = 2
	e := open(t, WithSigner(so), WithCheckpointPolicy(every, time.Minute))
	if _, err := e.l.AddSigner(ctx, Identity{RequestID: "r-add", Actor: "t", PID: 100}, vkh, "host"); err != nil {
		t.Fatal(err)
	}
	other := func(host string, s note.Signer) *Ledger {
		l, err := Open(ctx, e.root, WithClock(e.clock.Now), WithProcessProbe(e.probe),
			WithHost(Host{ID: host, BootID: "boot-1"}), WithSigner(s), WithTrustedKeys(vo), WithCheckpointPolicy(every, time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	host, stray := other("host-b", sh), other("host-c", ss)
	writes := func(l *Ledger, lock string, n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			id := Identity{RequestID: lock + "-" + string(rune('a'+i)), Actor: "t", PID: 100}
			if _, err := l.TryAcquire(ctx, AcquireRequest{Lock: lock, Identity: id, TTL: 10 * time.Second}); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Release(ctx, ReleaseRequest{Lock: lock, Identity: id}); err != nil {
				t.Fatal(err)
			}
		}
	}
	writes(stray, "s", 3)
	writes(host, "h", 1)
	var strays, hosts int
	if err := pgtest.Open(t, e.l.Source()).QueryRow(`SELECT count(*) FILTER (WHERE key_name = 'stray'), count(*) FILTER (WHERE key_name = 'host') FROM checkpoints`).Scan(&strays, &hosts); err != nil {
		t.Fatal(err)
	}
	if strays != 0 || hosts == 0 {
		t.Errorf("checkpoint rows: %d signed by the unregistered key (want none), %d by the registered host (want some)", strays, hosts)
	}
	// The others write on, past what any promise of the stray would allow.
	e.clock.Add(2 * time.Minute)
	writes(host, "h2", 3)
	writes(e.l, "o", 3)
	for _, c := range []struct {
		name string
		l    *Ledger
		keys []note.Verifier
	}{{"stray", stray, []note.Verifier{vs, vo}}, {"host", host, []note.Verifier{vh, vo}}, {"owner", e.l, []note.Verifier{vo}}} {
		rep, err := c.l.Verify(ctx, CheckAgainst(&replay.Trust{Verifiers: c.keys, OthersUnchecked: true}))
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK {
			t.Errorf("%s: verify: %v", c.name, rep.Problems)
		}
	}
}

// A registration anyone who can append could make first does not name
// the owner for an honest writer: mallory, a writer with a key of her
// own, registers herself as the owner before the owner does. The owner's
// writes still store checkpoints, the owner still registers its own key
// and a host's, and the host, which trusts the owner's key, stores its
// checkpoints; mallory's registration counts for none of them, and one
// of mallory's hosts (registered by her alone) is not a signer for them.
func TestForgedFirstRegistrationSilencesNoHonestWriter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	so, vo, _ := testkeys.Signer(t, "owner")
	sh, _, vkh := testkeys.Signer(t, "host")
	sm, vm, vkm := testkeys.Signer(t, "mallory")
	_, _, vkx := testkeys.Signer(t, "mallorys-host")
	const every = 2
	// The owner trusts its own key twice, as a writer whose trust store
	// pins its own key does.
	e := open(t, WithSigner(so), WithTrustedKeys(vo), WithCheckpointPolicy(every, time.Minute))
	other := func(host string, opts ...Option) *Ledger {
		l, err := Open(ctx, e.root, append([]Option{WithClock(e.clock.Now), WithProcessProbe(e.probe),
			WithHost(Host{ID: host, BootID: "boot-1"}), WithCheckpointPolicy(every, time.Minute)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	mallory := other("host-m", WithSigner(sm))
	id := func(r string) Identity { return Identity{RequestID: r, Actor: "t", PID: 100} }
	if _, err := mallory.AddSigner(ctx, id("r-m"), vkx, "host"); err != nil {
		t.Fatal(err)
	}
	rows := func(key string) int {
		t.Helper()
		var n int
		if err := pgtest.Open(t, e.l.Source()).QueryRow(`SELECT count(*) FROM checkpoints WHERE key_name = $1`, key).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	writes := func(l *Ledger, lock string, n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			r := id(lock + "-" + string(rune('a'+i)))
			if _, err := l.TryAcquire(ctx, AcquireRequest{Lock: lock, Identity: r, TTL: 10 * time.Second}); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Release(ctx, ReleaseRequest{Lock: lock, Identity: r}); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := rows("owner")
	writes(e.l, "o", 3)
	if after := rows("owner"); after == before {
		t.Fatalf("the owner stored no checkpoint after mallory's registration (%d rows before and after)", before)
	}
	if _, err := e.l.AddSigner(ctx, id("r-o"), vkh, "host"); err != nil {
		t.Fatalf("the owner's first registration after mallory's: %v", err)
	}
	_, _, vky := testkeys.Signer(t, "spare")
	if _, err := e.l.AddSigner(ctx, id("r-o2"), vky, "host"); err != nil {
		t.Fatalf("the owner's second registration: %v", err)
	}
	signers, _, err := e.l.Signers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, s := range signers {
		keys = append(keys, s.Role+" "+s.Key)
		if s.Key == vkm || s.Key == vkx {
			t.Errorf("the owner counts mallory's registration of %s", s.Key)
		}
	}
	if len(signers) != 3 {
		t.Errorf("the owner's signers: %v, want itself and two hosts", keys)
	}
	host := other("host-b", WithSigner(sh), WithTrustedKeys(vo))
	writes(host, "h", 3)
	if rows("host") == 0 {
		t.Errorf("the host the owner registered stored no checkpoint")
	}
	// Mallory's own view: she trusts her key, so her host is a signer to
	// her; verify with the owner's key does not take it.
	rep, err := e.l.Verify(ctx, CheckAgainst(&replay.Trust{Verifiers: []note.Verifier{vo}, OthersUnchecked: true}))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK {
		t.Errorf("verify with the owner's key: %v", rep.Problems)
	}
	rep, err = e.l.Verify(ctx, CheckAgainst(&replay.Trust{Verifiers: []note.Verifier{vm}, OthersUnchecked: true}))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Checkpoints {
		if c.Key == "host" && c.Result == "matches" {
			t.Errorf("verify with mallory's key took the owner's host's checkpoint: %+v", c)
		}
	}
}
