package timeline

import (
	"time"
)

// tick is one mark of the time axis.
type tick struct {
	t     time.Time
	label string
}

// steps are the tick spacings tried, finest first: round numbers of each
// unit, so that ticks fall on times people read at a glance.
var steps = []time.Duration{
	10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour,
	24 * time.Hour, 2 * 24 * time.Hour, 7 * 24 * time.Hour, 14 * 24 * time.Hour,
}

// month steps, for windows longer than steps cover.
var monthSteps = []int{1, 2, 3, 6, 12, 24, 60, 120}

// ticks are the axis marks of [start, end] in UTC, at most maxTicks of
// them, on round instants: milliseconds to weeks, then calendar months.
func ticks(start, end time.Time, maxTicks int) []tick {
	start, end = start.UTC(), end.UTC()
	span := end.Sub(start)
	for _, s := range steps {
		if span/s > time.Duration(maxTicks) {
			continue
		}
		var out []tick
		t := start.Truncate(s)
		if s >= 24*time.Hour {
			// Days start at midnight UTC, weeks on a Monday.
			t = time.Date(start.Year(), start.Month(), start.Day(), 0, 0, 0, 0, time.UTC)
			for t.Before(start) || (s >= 7*24*time.Hour && t.Weekday() != time.Monday) {
				t = t.Add(24 * time.Hour)
			}
		} else if t.Before(start) {
			t = t.Add(s)
		}
		for ; !t.After(end); t = t.Add(s) {
			out = append(out, tick{t: t, label: tickLabel(t, s)})
		}
		return out
	}
	for _, m := range monthSteps {
		months := (end.Year()-start.Year())*12 + int(end.Month()-start.Month())
		if months/m > maxTicks {
			continue
		}
		var out []tick
		t := time.Date(start.Year(), start.Month(), 1, 0, 0, 0, 0, time.UTC)
		if t.Before(start) {
			t = t.AddDate(0, 1, 0)
		}
		for (int(t.Month())-1)%m != 0 {
			t = t.AddDate(0, 1, 0)
		}
		for ; !t.After(end); t = t.AddDate(0, m, 0) {
			label := t.Format("2006-01")
			if m >= 12 {
				label = t.Format("2006")
			}
			out = append(out, tick{t: t, label: label})
		}
		return out
	}
	return nil
}

// tickLabel writes as much of t as the step needs (the axis's title
// carries the first date).
func tickLabel(t time.Time, step time.Duration) string {
	var clock string
	switch {
	case step < time.Second:
		clock = t.Format("15:04:05.000")
	case step < time.Minute:
		clock = t.Format("15:04:05")
	case step < 24*time.Hour:
		clock = t.Format("15:04")
	default:
		return t.Format("Jan 02")
	}
	if t.Hour() == 0 && t.Minute() == 0 && t.Second() == 0 && t.Nanosecond() == 0 {
		return t.Format("Jan 02 ") + clock
	}
	return clock
}
