package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/pgtest"
)

// TestReleaseSecret: an acquisition that asks for a release secret gets
// one (only in its Acquisition), lock_acquired records its SHA-256 and
// never the secret; a release presenting a wrong secret is refused
// (Denied, recorded as action_refused) even from the holder's uid, and
// the right one releases. Without asking there is no secret, and a secret
// presented for that holding is refused.
func TestReleaseSecret(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := open(t)
	r := req("a", "r1", os.Getpid())
	r.ReleaseSecret = true
	a, err := e.l.TryAcquire(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.ReleaseSecret) < 22 {
		t.Fatalf("release secret %q: want at least 128 bits of text", a.ReleaseSecret)
	}
	var body string
	if err := pgtest.Open(t, e.l.Source()).QueryRow(`SELECT body FROM events WHERE seq = $1`, a.Seq).Scan(&body); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(a.ReleaseSecret))
	if strings.Contains(body, a.ReleaseSecret) || !strings.Contains(body, `"release_secret_sha256":"`+hex.EncodeToString(sum[:])+`"`) {
		t.Fatalf("lock_acquired %s: want the secret's SHA-256 and never the secret", body)
	}

	n := count(t, e.l)
	_, err = e.l.Release(ctx, ReleaseRequest{Lock: "a", Identity: Identity{RequestID: "r1", PID: os.Getpid()}, Secret: a.ReleaseSecret + "x"})
	var nh *NotHolderError
	if !errors.As(err, &nh) || !strings.Contains(nh.Denied, "release secret given is not the one") {
		t.Fatalf("release with a wrong secret: %v, want a NotHolderError naming the rule", err)
	}
	if count(t, e.l) != n+1 {
		t.Fatal("the refusal is not recorded")
	}
	out, err := e.l.Release(ctx, ReleaseRequest{Lock: "a", Identity: Identity{RequestID: "r1", PID: os.Getpid()}, Secret: a.ReleaseSecret})
	if err != nil || !out.Released {
		t.Fatalf("release with the secret: %+v, %v", out, err)
	}
	if err := pgtest.Open(t, e.l.Source()).QueryRow(`SELECT body FROM events WHERE seq = $1`, out.Seq).Scan(&body); err != nil {
		t.Fatal(err)
	}
	// The holder's own uid needed no secret: nothing says it authorised the release.
	if strings.Contains(body, "authorized_by") {
		t.Fatalf("the holder's own release records %s", body)
	}

	b, err := e.l.TryAcquire(ctx, req("a", "r2", os.Getpid()))
	if err != nil || b.ReleaseSecret != "" {
		t.Fatalf("acquire without asking: secret %q, %v", b.ReleaseSecret, err)
	}
	_, err = e.l.Release(ctx, ReleaseRequest{Lock: "a", Identity: Identity{RequestID: "r2", PID: os.Getpid()}, Secret: a.ReleaseSecret})
	if !errors.As(err, &nh) || !strings.Contains(nh.Denied, "without a release secret") {
		t.Fatalf("a secret for a holding without one: %v, want refused", err)
	}
	if _, err := e.l.Release(ctx, ReleaseRequest{Lock: "a", Identity: Identity{RequestID: "r2", PID: os.Getpid()},
		Secret: strings.Repeat("s", maxReleaseSecret+1)}); !errors.As(err, new(*events.InvalidError)) {
		t.Fatalf("an oversized secret: %v, want invalid input", err)
	}
}
