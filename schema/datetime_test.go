package schema

import (
	"fmt"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

var libraryDateTime = jsonschema.Formats["date-time"]

func sameDateTime(tb testing.TB, s string) {
	tb.Helper()
	if got, want := isDateTime([]byte(s)), libraryDateTime(s); got != want {
		tb.Fatalf("isDateTime(%q) = %v, the library says %v", s, got, want)
	}
}

var dateTimeSeeds = []string{
	"2026-01-02T03:04:05Z", "2026-01-02t03:04:05z", "2026-01-02T03:04:05.123456789Z", "2026-01-02T03:04:05.Z",
	"2026-01-02T03:04:05+01:00", "2026-01-02T03:04:05.5-23:59", "2026-01-02T03:04:05+24:00", "2026-01-02T03:04:05+00:60",
	"2026-01-02T03:04:05+01:00x", "2026-01-02T03:04:05+0100", "2026-01-02T03:04:05", "2026-01-02 03:04:05Z",
	"2026-12-31T23:59:60Z", "2026-12-31T23:58:60Z", "2026-12-31T22:59:60-01:00", "2026-12-31T23:59:60-01:00",
	"2026-01-01T00:59:60+01:00", "2026-01-01T00:00:60+00:01", "2026-01-01T23:59:60+00:00",
	"2024-02-29T00:00:00Z", "2023-02-29T00:00:00Z", "2000-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "0000-02-29T00:00:00Z",
	"2026-04-31T00:00:00Z", "2026-13-01T00:00:00Z", "2026-00-01T00:00:00Z", "2026-01-00T00:00:00Z", "2026-01-32T00:00:00Z",
	"+026-01-02T03:04:05Z", "2026-+1-02T03:04:05Z", "2026-01-+2T03:04:05Z", "2026-1-02T03:04:05Z",
	"2026-01-02T+3:04:05Z", "2026-01-02T-0:04:05Z", "2026-01-02T03:-0:+5Z", "2026-01-02T03:04:05+-1:00",
	"2026-01-02T03:04:05-+1:-0", "2026-01-02T-1:04:05Z", "2026-01-02T24:00:00Z", "2026-01-02T03:60:00Z", "2026-01-02T03:04:61Z",
	"2026-01-02T+ :04:05Z", "2026-01-02T03:04:05.1234567890123456789Z", "２026-01-02T03:04:05Z", "2026-01-02T03:04:05\x00",
	"", "2026-01-02", "2026-01-02T", "2026-01-02T03:04:0Z", "2026-01-02T03:04:05ZZ",
}

// TestDateTimeMatchesLibrary compares the port with the library on the
// seeds, every one-byte change of them, and a sweep of the numeric fields.
func TestDateTimeMatchesLibrary(t *testing.T) {
	alphabet := "0123456789+-:.TtZz 5\x00é"
	n := 0
	for _, seed := range dateTimeSeeds {
		sameDateTime(t, seed)
		for i := 0; i <= len(seed); i++ {
			sameDateTime(t, seed[:i])
			if i < len(seed) {
				sameDateTime(t, seed[:i]+seed[i+1:])
			}
			for _, c := range strings.Split(alphabet, "") {
				sameDateTime(t, seed[:i]+c+seed[i:])
				if i < len(seed) {
					sameDateTime(t, seed[:i]+c+seed[i+1:])
				}
				n += 2
			}
		}
	}
	fields := []string{"00", "01", "09", "10", "11", "12", "13", "22", "23", "24", "28", "29", "30", "31", "32", "58", "59", "60", "61", "99",
		"+0", "+9", "-0", "-1", "+ ", "0+", "--", "++"}
	for _, year := range []string{"1900", "2000", "2023", "2024", "0000", "9999"} {
		for _, mo := range fields {
			for _, d := range fields {
				sameDateTime(t, year+"-"+mo+"-"+d+"T00:00:00Z")
				n++
			}
		}
	}
	for _, h := range fields {
		for _, m := range fields {
			for _, s := range []string{"00", "59", "60", "+6", "61"} {
				for _, off := range []string{"Z", "+00:00", "-00:01", "+00:01", "-01:00", "+01:00", "+23:59", "-23:59", "+" + h + ":" + m, "-" + m + ":" + h} {
					sameDateTime(t, fmt.Sprintf("2026-06-30T%s:%s:%s%s", h, m, s, off))
					n++
				}
			}
		}
	}
	t.Logf("%d strings", n)
}
