package replay

import (
	"testing"

	"github.com/lockledger/lockledger/events"
)

// TestLockTimeMatchesFormat holds the cut of at to events.FormatLockTime
// of the time it parses to, in the ledger's form and in the others.
func TestLockTimeMatchesFormat(t *testing.T) {
	for _, at := range []string{
		"2026-11-10T12:34:56.999999999Z",
		"2026-11-10T12:34:56.000000000Z",
		"1999-12-31T23:59:59.500000000Z",
		"2026-11-10T12:34:56Z",
		"2026-11-10T12:34:56.5Z",
		"2026-11-10T12:34:56.123456789+02:00",
		"2026-11-10T23:59:59.99999999-01:00",
	} {
		tm, err := events.ParseTime(at)
		if err != nil {
			t.Fatalf("%s: %v", at, err)
		}
		ev := &Event{Time: tm}
		ev.At = at
		if got, want := lockTime(ev), events.FormatLockTime(tm); got != want {
			t.Errorf("lockTime(%q) = %q, want %q", at, got, want)
		}
	}
}
