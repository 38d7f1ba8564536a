package invocation

import (
	"errors"
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
	}
	for in, want := range cases {
		got, err := ParseTime("--since", in, now)
		if err != nil || !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "yesterday", "-2h", "2025-13-01", "10:31", "2h ago"} {
		_, err := ParseTime("--since", bad, now)
		var inv *events.InvalidError
		if !errors.Is(err, events.ErrInvalid) || !errors.As(err, &inv) || inv.Field != "--since" {
			t.Errorf("ParseTime(%q) = %v, want an invalid --since", bad, err)
		}
	}
	r := TimeRange{Since: "1h", Until: "2h"}
	if _, _, err := r.Parse(now); !errors.Is(err, events.ErrInvalid) {
		t.Errorf("--since after --until: %v", err)
	}
}
