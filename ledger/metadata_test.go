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
