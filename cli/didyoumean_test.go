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
