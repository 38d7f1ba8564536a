package ledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestLargestAcquisitionWritesAReadableLockFile: metadata and intent at
// their bounds, made of the characters JSON escapes, still give a lock file
// that ParseLockFile accepts; one entry or byte more is refused up front.
func TestLargestAcquisitionWritesAReadableLockFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := open(t)
	big := func() AcquireRequest {
		r := req("big", "r1", 100)
		r.Intent, r.IntentVersion = strings.Repeat(`"`, 256), strings.Repeat(`\`, 256)
		r.Metadata = map[string]string{}
		per := MaxMetadataBytes / MaxMetadataEntries
		for i := 0; i < MaxMetadataEntries; i++ {
			k := fmt.Sprintf("%03d", i) + strings.Repeat(`"`, 125)
			r.Metadata[k] = strings.Repeat(`\`, per-len(k))
		}
		return r
	}
	if _, err := e.l.TryAcquire(ctx, big()); err != nil {
		t.Fatalf("acquire at every bound: %v", err)
	}
	data, err := os.ReadFile(e.l.LockPath("big"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseLockFile(data); err != nil {
		t.Fatalf("the ledger wrote a %d-byte lock file it cannot read: %v", len(data), err)
	}
	before := count(t, e.l)
	tooMany := big()
	tooMany.Lock, tooMany.Metadata["one-more"] = "b2", ""
	tooBig := big()
	tooBig.Lock = "b3"
	for k := range tooBig.Metadata {
		tooBig.Metadata[k] += "x"
		break
	}
	for name, r := range map[string]AcquireRequest{"entries": tooMany, "bytes": tooBig} {
		if _, err := e.l.TryAcquire(ctx, r); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "metadata") {
			t.Errorf("metadata over its %s bound: %v, want ErrInvalid naming metadata", name, err)
		}
	}
	if got := count(t, e.l); got != before {
		t.Fatalf("refused acquisitions appended events: %d -> %d", before, got)
	}
}

// TestTextMustBeValidUTF8: invalid UTF-8 would be stored raw in the locks
// table but as U+FFFD escapes in the event and the lock file (so verify
// would report drift, and escaping could blow the lock file past its
// limit): it is refused up front, naming the field.
func TestTextMustBeValidUTF8(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := open(t)
	bad := map[string]func(*AcquireRequest){
		"metadata value": func(r *AcquireRequest) { r.Metadata = map[string]string{"k": "caf\xe9"} },
		"metadata key":   func(r *AcquireRequest) { r.Metadata = map[string]string{"\xff": "v"} },
		"intent":         func(r *AcquireRequest) { r.Intent = "deploy \xc3" },
	}
	for field, spoil := range bad {
		r := req("utf8", "r1", 100)
		spoil(&r)
		if _, err := e.l.TryAcquire(ctx, r); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "UTF-8") {
			t.Errorf("invalid UTF-8 in the %s: %v, want ErrInvalid naming UTF-8", field, err)
		}
	}
	if n := count(t, e.l); n != 0 {
		t.Fatalf("%d events after refused acquisitions, want 0", n)
	}
}
