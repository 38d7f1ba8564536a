package invocation

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
)

func TestParseTime(t *testing.T) {
	now := time.Date(2025, 3, 14, 12, 0, 0, 500, time.UTC)
	cases := map[string]time.Time{
		"2025-03-14T10:31:00Z":           time.Date(2025, 3, 14, 10, 31, 0, 0, time.UTC),
		"2025-03-14T11:31:00.25+01:00":   time.Date(2025, 3, 14, 10, 31, 0, 250e6, time.UTC),
		"2025-03-14T10:31:00.123456789Z": time.Date(2025, 3, 14, 10, 31, 0, 123456789, time.UTC),
		"2025-03-14":                     time.Date(2025, 3, 14, 0, 0, 0, 0, time.UTC),
		"now":                            now,
		"2h":                             now.Add(-2 * time.Hour),
		"90s":                            now.Add(-90 * time.Second),
		"1h30m":                          now.Add(-90 * time.Minute),
		"900":                            now.Add(-900 * time.Second),
		"0":                              now,
		"999999999":                      now.Add(-999999999 * time.Second),
		"@1741948260":                    time.Date(2025, 3, 14, 10, 31, 0, 0, time.UTC),
		"@0":                             time.Unix(0, 0).UTC(),
		"@253402300799":                  time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
	}
	for in, want := range cases {
		got, err := ParseTime("--since", in, now)
		if err != nil || !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "yesterday", "--2h", "-", "2025-13-01", "25:31", "2025-03-14 25:00", "10:31 CET", "2h ago"} {
		_, err := ParseTime("--since", bad, now)
		var inv *events.InvalidError
		if !errors.Is(err, events.ErrInvalid) || !errors.As(err, &inv) || inv.Field != "--since" {
			t.Errorf("ParseTime(%q) = %v, want an invalid --since", bad, err)
		}
	}
	// A Unix time typed without its @ (date +%s) is refused, naming the
	// instant it would be with one: read as seconds ago it named 1970.
	for _, unix := range []string{"1741948260", "-1741948260", "1000000000"} {
		_, err := ParseTime("--at", unix, now)
		var inv *events.InvalidError
		if !errors.As(err, &inv) || inv.Field != "--at" || !strings.Contains(inv.Rule, "a Unix time is written @") {
			t.Errorf("ParseTime(%q) = %v, want an invalid --at saying how a Unix time is written", unix, err)
		}
	}
	// Past year 9999 (@253402300800 on) an instant has no RFC 3339 form,
	// and at the int64 edge who answered held for a lock stale since 2026.
	for _, bad := range []string{"@", "@x", "@-1", "@1.5", "@@1", "@1e9", "@253402300800", "@9999999999999", "@9223372036854775807"} {
		_, err := ParseTime("--at", bad, now)
		var inv *events.InvalidError
		if !errors.As(err, &inv) || inv.Field != "--at" || !strings.Contains(inv.Rule, "at most @253402300799") {
			t.Errorf("ParseTime(%q) = %v, want an invalid --at naming the last Unix time taken", bad, err)
		}
	}
	r := TimeRange{Since: "1h", Until: "2h"}
	if _, _, err := r.Parse(now); !errors.Is(err, events.ErrInvalid) {
		t.Errorf("--since after --until: %v", err)
	}
}

// TestParseTimeWallClock: a time without an offset is read on the clocks
// of the zone the command runs in (now's); a time of day alone is today's
// there; a leading minus is a duration ago, as without it.
func TestParseTimeWallClock(t *testing.T) {
	cet := time.FixedZone("CET", 3600)
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, cet)
	cases := map[string]time.Time{
		"10:31":               time.Date(2026, 12, 5, 9, 31, 0, 0, time.UTC),
		"10:31:05":            time.Date(2026, 12, 5, 9, 31, 5, 0, time.UTC),
		"2026-12-05 10:31":    time.Date(2026, 12, 5, 9, 31, 0, 0, time.UTC),
		"2026-12-05 09:17:36": time.Date(2026, 12, 5, 8, 17, 36, 0, time.UTC),
		"2026-12-04T23:59":    time.Date(2026, 12, 4, 22, 59, 0, 0, time.UTC),
		"2026-12-04T23:59:30": time.Date(2026, 12, 4, 22, 59, 30, 0, time.UTC),
		"-15m":                now.Add(-15 * time.Minute),
		"-900":                now.Add(-15 * time.Minute),
		// An offset, or a date alone, is what it says wherever it is read.
		"2026-12-05T10:31:00Z": time.Date(2026, 12, 5, 10, 31, 0, 0, time.UTC),
		"2026-12-05":           time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC),
	}
	for in, want := range cases {
		got, err := ParseTime("--at", in, now)
		if err != nil || !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("ParseTime(%q) in CET = %v, %v; want %v", in, got, err, want)
		}
	}
	// Just after midnight in CET it is still the day before in UTC: the
	// time of day is the local day's.
	early := time.Date(2026, 12, 5, 0, 30, 0, 0, cet)
	if got, _ := ParseTime("--at", "00:10", early); !got.Equal(time.Date(2026, 12, 4, 23, 10, 0, 0, time.UTC)) {
		t.Errorf("00:10 at 00:30 CET = %v, want 2026-12-04T23:10:00Z", got)
	}
}
