package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
)

// TestUnknownFlagSaysDidYouMean: a mistyped flag is bad input (exit 2)
// that names the command's flags nearest to it; one near none says only
// that it is unknown.
func TestUnknownFlagSaysDidYouMean(t *testing.T) {
	root := filepath.Join(t.TempDir(), "none")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"acquire", "x", "--holdr", "none"}, "unknown flag: --holdr; did you mean --holder?"},
		{[]string{"release", "x", "--reqest-id", "r"}, "did you mean --request-id?"},
		{[]string{"timeline", "--sinse", "2h"}, "did you mean --since?"},
		{[]string{"--jsn", "status"}, "did you mean --json?"},
		{[]string{"acquire", "x", "--zzzzzz"}, "unknown flag: --zzzzzz (see --help)"},
		// Other lock tools' flags, typed from habit, say what to type here.
		{[]string{"run", "x", "--timeout", "5", "true"}, "unknown flag: --timeout; did you mean --wait (-w)?"},
		{[]string{"run", "x", "-timeout", "5", "true"}, "did you mean --wait (-w)?"},
		{[]string{"acquire", "x", "-lock-timeout=5m"}, "did you mean --wait (-w)?"},
		{[]string{"run", "x", "-x", "true"}, "unknown shorthand flag: 'x' in -x; a lock is exclusive unless --shared (-s)"},
		{[]string{"run", "x", "-xn", "true"}, "leave flock's -x out"},
		{[]string{"acquire", "x", "--exclusive"}, "leave flock's -x out"},
		{[]string{"run", "x", "-o", "true"}, "flock's -o has no counterpart"},
		{[]string{"run", "x", "-u"}, "use lockledger release NAME"},
		// Only where the command has the flag the hint names.
		{[]string{"status", "x", "--timeout", "5"}, "unknown flag: --timeout (see --help)"},
		{[]string{"acquire", "x", "-o"}, "unknown shorthand flag: 'o' in -o (see --help)"},
	} {
		r := clitest.Run(t, root, tc.args...)
		if r.Code != 2 || !strings.Contains(r.Stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 saying %q", tc.args, r.Code, r.Stderr, tc.want)
		}
	}
	if _, err := os.Lstat(root); !os.IsNotExist(err) {
		t.Errorf("a mistyped flag created the root: %v", err)
	}
}
