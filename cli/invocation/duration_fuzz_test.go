package invocation_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
)

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{
		"90s", "15m", "1h30m", "900", "0", "-0", "+5", "-5", "-1s", "", " ", "1.5s", "500ms", "1e3", "1.5",
		"soon", "9223372036854775807", "3153600000", "3153600001", "2562047h47m16.854775807s", "2562048h",
		"1h-1m", "0x10", "٣", "1\x00s", "10 s", "µs", "1µs", "1us", "00000000000000000000090",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := invocation.ParseDuration("--ttl", s)
		if err != nil {
			var inv *events.InvalidError
			if !errors.Is(err, events.ErrInvalid) || !errors.As(err, &inv) || inv.Field != "--ttl" ||
				!strings.Contains(err.Error(), "--ttl") {
				t.Fatalf("ParseDuration(%q) error %v (%T) does not name --ttl as invalid input", s, err, err)
			}
			return
		}
		if d < 0 {
			t.Fatalf("ParseDuration(%q) = %v: negative", s, d)
		}
		if n, perr := strconv.ParseInt(s, 10, 64); perr == nil {
			if d != time.Duration(n)*time.Second || d/time.Second != time.Duration(n) {
				t.Fatalf("ParseDuration(%q) = %v, want %d plain seconds", s, d, n)
			}
		} else if td, terr := time.ParseDuration(s); terr != nil || td != d {
			t.Fatalf("ParseDuration(%q) = %v, but Go syntax gives %v, %v", s, d, td, terr)
		}
		// What the CLI prints back (d.String()) parses to the same duration.
		if d2, err := invocation.ParseDuration("--ttl", d.String()); err != nil || d2 != d {
			t.Fatalf("ParseDuration(%q) = %v, but ParseDuration(%q) = %v, %v", s, d, d.String(), d2, err)
		}
	})
}
