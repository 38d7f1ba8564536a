package schema

import "testing"

// FuzzDateTimeMatchesLibrary: isDateTime agrees with the library's
// "date-time" format on any string.
//
//	go test -run '^$' -fuzz '^FuzzDateTimeMatchesLibrary$' -fuzztime 1m ./schema/
func FuzzDateTimeMatchesLibrary(f *testing.F) {
	for _, s := range dateTimeSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { sameDateTime(t, s) })
}
