package invocation_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
)

func TestParseWait(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"0": 0, "5": 5 * time.Second, "0.5": 500 * time.Millisecond, ".25": 250 * time.Millisecond, "2.": 2 * time.Second,
		"1.5s": 1500 * time.Millisecond, "90s": 90 * time.Second, "15m": 15 * time.Minute, "0.000000001": time.Nanosecond,
		"forever": invocation.WaitForever, "inf": invocation.WaitForever, "Infinity": invocation.WaitForever, "2562047h": invocation.WaitForever,
	} {
		if got, err := invocation.ParseWait("--wait", in); err != nil || got != want {
			t.Errorf("ParseWait(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "-0.5", "-1s", "1e3", "0.5.1", ".", "soon", "1,5", "0x10", "99999999999.5", "forever!", " 1"} {
		_, err := invocation.ParseWait("--wait", bad)
		var inv *events.InvalidError
		if !errors.As(err, &inv) || inv.Field != "--wait" {
			t.Errorf("ParseWait(%q) = %v, want an invalid --wait", bad, err)
		}
	}
	// Seconds past forever are seconds all the same: the message names
	// the rule they break, not the syntax they have.
	for _, big := range []string{"4000000000", "99999999999999999999", "99999999999.5"} {
		if _, err := invocation.ParseWait("--wait", big); !errors.Is(err, events.ErrInvalid) || !strings.Contains(err.Error(), "too large") {
			t.Errorf("ParseWait(%q) = %v, want an invalid --wait that is too large", big, err)
		}
	}
}

func FuzzParseWait(f *testing.F) {
	for _, s := range []string{"0", "0.5", "1.5s", "forever", "inf", "-1", ".", "1.", ".5", "1e3", "99999999999.5", "2562048h", "900"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := invocation.ParseWait("-w", s)
		if err != nil {
			if !errors.Is(err, events.ErrInvalid) || !strings.Contains(err.Error(), "-w") {
				t.Fatalf("ParseWait(%q) error %v does not name -w as invalid input", s, err)
			}
			if pd, perr := invocation.ParseDuration("-w", s); perr == nil {
				t.Fatalf("ParseWait(%q) refused what ParseDuration takes (%v)", s, pd)
			}
			return
		}
		if d < 0 || d > invocation.WaitForever {
			t.Fatalf("ParseWait(%q) = %v: out of 0..forever", s, d)
		}
		if pd, perr := invocation.ParseDuration("-w", s); perr == nil && d != min(pd, invocation.WaitForever) {
			t.Fatalf("ParseWait(%q) = %v, but ParseDuration gives %v", s, d, pd)
		}
		if d < invocation.WaitForever {
			if d2, err := invocation.ParseWait("-w", d.String()); err != nil || d2 != d {
				t.Fatalf("ParseWait(%q) = %v, but ParseWait(%q) = %v, %v", s, d, d.String(), d2, err)
			}
		}
	})
}
