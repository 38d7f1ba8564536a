package ledger

import (
	"context"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/replay"
)

// namedKey is a signing key named name, with its verifier key text.
func namedKey(t *testing.T, name string) (note.Signer, note.Verifier, string) {
	t.Helper()
	sk, vk, err := checkpoint.GenerateKey(name)
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
	return s, v, vk
}

// A host whose key the ledger's signers do not register only appends: it
// stores no checkpoint (so no promise it could not keep while idle), and
// verify passes for it and for the owner after the others write on.
func TestUnregisteredWriterStoresNoCheckpoint(t *testing.T) {
	ctx := context.Background()
	so, vo, _ := namedKey(t, "owner")
	sh, vh, vkh := namedKey(t, "host")
	ss, vs, _ := namedKey(t, "stray")
	const every = 2
	e := open(t, WithSigner(so), WithCheckpointPolicy(every, time.Minute))
	if _, err := e.l.AddSigner(ctx, Identity{RequestID: "r-add", Actor: "t", PID: 100}, vkh, "host"); err != nil {
		t.Fatal(err)
	}
	other := func(host string, s note.Signer) *Ledger {
		l, err := Open(ctx, e.root, WithClock(e.clock.Now), WithProcessProbe(e.probe),
			WithHost(Host{ID: host, BootID: "boot-1"}), WithSigner(s), WithCheckpointPolicy(every, time.Minute))
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
	if err := e.l.DB().QueryRow(`SELECT count(*) FILTER (WHERE key_name = 'stray'), count(*) FILTER (WHERE key_name = 'host') FROM checkpoints`).Scan(&strays, &hosts); err != nil {
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
