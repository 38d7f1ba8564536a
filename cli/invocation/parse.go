package invocation

import (
	"strconv"
	"strings"
	"time"

	"github.com/lockledger/lockledger/events"
)

// ParseDuration accepts Go syntax (90s, 15m, 1h30m) or plain seconds (900).
func ParseDuration(field, s string) (time.Duration, error) {
	if s == "" {
		return 0, events.Invalid(field, s, "must be a duration such as 90s, 15m or plain seconds")
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return 0, events.Invalid(field, s, "must not be negative")
		}
		if n > int64(100*365*24*time.Hour/time.Second) {
			return 0, events.Invalid(field, s, "is too large")
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, events.Invalid(field, s, "must be a duration such as 90s, 15m or plain seconds")
	}
	if d < 0 {
		return 0, events.Invalid(field, s, "must not be negative")
	}
	return d, nil
}

// WaitForever is what --wait forever means: a hundred years, which no
// caller outlives, and which every deadline computed from it holds without
// overflowing.
const WaitForever = 100 * 365 * 24 * time.Hour

// waitRule is quoted when a --wait value does not parse.
const waitRule = "must be seconds (5, 0.5, as flock -w), a duration (90s, 1.5s, 15m) or forever"

// ParseWait reads a time to wait for a lock: plain seconds with or without
// a fraction (0.5, as flock -w takes them), ParseDuration's syntax, or
// "forever" (also "inf", "infinity") for WaitForever. A negative value is
// refused, -1 included: a budget a script computes that runs below zero
// must not turn into waiting forever.
func ParseWait(field, s string) (time.Duration, error) {
	switch strings.ToLower(s) {
	case "forever", "inf", "infinity":
		return WaitForever, nil
	}
	if strings.HasPrefix(s, "-") {
		return 0, events.Invalid(field, s, "must not be negative (wait without end with "+field+" forever)")
	}
	if decimalSeconds(s) {
		d, err := time.ParseDuration(s + "s")
		if err != nil || d > WaitForever {
			return 0, events.Invalid(field, s, "is too large (use forever)")
		}
		return d, nil
	}
	d, err := ParseDuration(field, s)
	if err != nil {
		return 0, events.Invalid(field, s, waitRule)
	}
	return min(d, WaitForever), nil
}

// decimalSeconds says whether s is plain seconds: digits with at most one
// decimal point (5, 0.5, 1.25, .5, 2.). Whole seconds go this way too, so
// that too many of them are said to be too large, not to be no seconds.
func decimalSeconds(s string) bool {
	return s != "" && s != "." && strings.Count(s, ".") <= 1 && strings.Trim(s, "0123456789.") == ""
}

// ParseMetadata turns repeated k=v flags into a map.
func ParseMetadata(kvs []string) (map[string]string, error) {
	md := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, events.Invalid("--metadata", kv, "must be key=value with a non-empty key")
		}
		if _, dup := md[k]; dup {
			return nil, events.Invalid("--metadata", kv, "key "+k+" given twice")
		}
		md[k] = v
	}
	return md, nil
}
