package cli

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
