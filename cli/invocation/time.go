package invocation

import (
	"time"

	"github.com/lockledger/lockledger/events"
)

// timeRule is quoted when a time does not parse.
const timeRule = "must be an RFC 3339 time (2025-03-14T10:31:00Z, 2025-03-14T11:31:00+01:00), a date (2025-03-14, midnight UTC), \"now\", or a duration meaning that long ago (2h, 90s, 900)"

// ParseTime reads a time flag: RFC 3339 (any offset, with or without a
// fraction), a date alone (midnight UTC), "now", or a duration in
// ParseDuration's syntax meaning that long before now ("--since 2h").
// The result is UTC.
func ParseTime(field, s string, now time.Time) (time.Time, error) {
	switch s {
	case "":
		return time.Time{}, events.Invalid(field, s, timeRule)
	case "now":
		return now.UTC(), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t.UTC(), nil
	}
	d, err := ParseDuration(field, s)
	if err != nil {
		return time.Time{}, events.Invalid(field, s, timeRule)
	}
	return now.Add(-d).UTC(), nil
}

// TimeRange is the --since/--until pair.
type TimeRange struct {
	Since, Until string
}

// Parse returns the bounds, zero when a flag is not set.
func (r TimeRange) Parse(now time.Time) (since, until time.Time, err error) {
	if r.Since != "" {
		if since, err = ParseTime("--since", r.Since, now); err != nil {
			return
		}
	}
	if r.Until != "" {
		if until, err = ParseTime("--until", r.Until, now); err != nil {
			return
		}
	}
	if !since.IsZero() && !until.IsZero() && since.After(until) {
		err = events.Invalid("--since", r.Since, "must not be after --until ("+events.FormatTime(until)+")")
	}
	return
}
