package invocation

import (
	"strings"
	"time"

	"github.com/lockledger/lockledger/events"
)

// timeRule is quoted when a time does not parse.
const timeRule = "must be an RFC 3339 time (2025-03-14T10:31:00Z, 2025-03-14T11:31:00+01:00), a local wall-clock time " +
	"(10:31 today, \"2025-03-14 10:31\", 2025-03-14T10:31:05), a date (2025-03-14, midnight UTC), \"now\", " +
	"or a duration meaning that long ago (2h, -15m, 90s, 900)"

// localLayouts are the wall-clock forms read in the local zone: a time
// without an offset means the time on the clocks where the command runs.
var localLayouts = []string{"2006-01-02 15:04", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02T15:04:05"}

// clockLayouts are a time of day alone: today, in the local zone.
var clockLayouts = []string{"15:04", "15:04:05"}

// ParseTime reads a time flag (--at, --since, --until, ...): RFC 3339 (any
// offset, with or without a fraction), a local wall-clock time (a date and
// a time without an offset, or a time of day alone meaning today) in now's
// zone, a date alone (midnight UTC), "now", or a duration in
// ParseDuration's syntax meaning that long before now ("--since 2h", with
// or without a leading minus: "-15m"). The result is UTC.
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
	loc := now.Location()
	for _, layout := range localLayouts {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t.UTC(), nil
		}
	}
	for _, layout := range clockLayouts {
		if c, err := time.Parse(layout, s); err == nil {
			y, m, d := now.In(loc).Date()
			return time.Date(y, m, d, c.Hour(), c.Minute(), c.Second(), 0, loc).UTC(), nil
		}
	}
	ago := strings.TrimPrefix(s, "-")
	if ago == "" || strings.HasPrefix(ago, "-") {
		return time.Time{}, events.Invalid(field, s, timeRule)
	}
	d, err := ParseDuration(field, ago)
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
