package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/cli/invocation"
)

// TestRunArgs: "--" goes before the command of run NAME CMD... wherever
// run's flags (and the global ones) end, and nowhere else.
func TestRunArgs(t *testing.T) {
	for in, want := range map[string]string{
		"run l true":                     "run l -- true",
		"run l echo -n x":                "run l -- echo -n x",
		"run -w 5 l make -j4":            "run -w 5 l -- make -j4",
		"run l -sw5 make":                "run l -sw5 -- make",
		"run l -sw 5 make":               "run l -sw 5 -- make",
		"run l -w=5 -E 7 make":           "run l -w=5 -E 7 -- make",
		"run l --ttl=60 --shared make":   "run l --ttl=60 --shared -- make",
		"run l --ttl 60 make":            "run l --ttl 60 -- make",
		"--root /r -q run --json l make": "--root /r -q run --json l -- make",
		"run l -- make -x":               "run l -- make -x",
		"run l make -- x":                "run l -- make -- x",
		"run l -c true":                  "run l -c true",
		"run l":                          "run l",
		"run l -z make":                  "run l -z make",
		"run l --bogus make":             "run l --bogus make",
		"run l --help":                   "run l --help",
		"run l make --help":              "run l -- make --help",
		"acquire l true":                 "acquire l true",
		"status run x":                   "status run x",
		"run":                            "run",
		"run l -w":                       "run l -w",
	} {
		got := runArgs(newRoot(&invocation.Globals{}), strings.Fields(in))
		if !slices.Equal(got, strings.Fields(want)) {
			t.Errorf("runArgs(%s) = %q, want %q", in, got, want)
		}
	}
}
