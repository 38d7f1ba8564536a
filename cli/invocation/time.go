package invocation

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockledger/lockledger/events"
)

// timeRule is quoted when a time does not parse.
const timeRule = "must be an RFC 3339 time (2025-03-14T10:31:00Z, 2025-03-14T11:31:00+01:00), a local wall-clock time " +
	"(10:31 today, \"2025-03-14 10:31\", 2025-03-14T10:31:05), a date (2025-03-14, midnight UTC), \"now\", " +
	"a Unix time (@1741948260, as date -d takes it) or a duration meaning that long ago (2h, -15m, 90s, 900)"

// unixLike is the least plain number of seconds read as a Unix time typed
// without its @, and refused: 10^9 seconds before now is more than 31
// years ago, before any ledger, and 10^9 as a Unix time is 2001.
const unixLike = 1e9

// maxUnix is the last Unix time taken: 9999-12-31T23:59:59Z, the last
// second with the four-digit year RFC 3339 writes. Past it an answer names
// an instant no reader of the output parses, and far past it the sums of
// the instant (its age, whether a holding is stale by then) overflow and
// come out wrong.
const maxUnix = 253402300799

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
	if secs, ok := strings.CutPrefix(s, "@"); ok {
		n, err := strconv.ParseInt(secs, 10, 64)
		if err != nil || n < 0 || n > maxUnix {
			return time.Time{}, events.Invalid(field, s, fmt.Sprintf("a Unix time is @ and whole seconds since 1970-01-01 UTC (date +%%s prints them), at most @%d (9999-12-31T23:59:59Z)", maxUnix))
		}
		return time.Unix(n, 0).UTC(), nil
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
	if n, err := strconv.ParseFloat(ago, 64); err == nil && n >= unixLike {
		// date +%s pasted without its @: read as seconds ago it would
		// name a moment decades back and answer for it without a word.
		return time.Time{}, events.Invalid(field, s, fmt.Sprintf("a plain number is seconds ago, and %s seconds ago is %s, before any ledger; "+
			"a Unix time is written @%s (that is %s)", ago, events.FormatTime(now.Add(-d).UTC()), ago, unixText(ago)))
	}
	return now.Add(-d).UTC(), nil
}

// unixText is the instant of Unix time secs, or secs when it is not whole
// seconds.
func unixText(secs string) string {
	n, err := strconv.ParseInt(secs, 10, 64)
	if err != nil {
		return "whole seconds since 1970-01-01 UTC"
	}
	return events.FormatTime(time.Unix(n, 0).UTC())
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
