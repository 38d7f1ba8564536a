package auditcmd_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
)

// TestEvidenceNamesTheMissingEndOfItsPeriod: evidence with one end of its
// period given is bad input naming the flag left out (it named --since,
// given, in "--since "1h": and --until are both required"), and writes
// nothing.
func TestEvidenceNamesTheMissingEndOfItsPeriod(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	clitest.Must(t, 0, root, "run", "deploy", "--", "true")
	before := clitest.EventCount(t, root)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--since", "1h"}, `lockledger: --until: is required`},
		{[]string{"--until", "now"}, `lockledger: --since: is required`},
		{nil, `lockledger: --since: is required`},
	} {
		out := filepath.Join(t.TempDir(), "bundle.jsonl")
		r := clitest.Run(t, root, append(append([]string{"evidence"}, tc.args...), "-o", out)...)
		if r.Code != 2 || !strings.HasPrefix(r.Stderr, tc.want) {
			t.Errorf("evidence %v: exit %d, stderr %q; want exit 2 saying %q", tc.args, r.Code, r.Stderr, tc.want)
		}
	}
	if n := clitest.EventCount(t, root); n != before {
		t.Errorf("the refused commands appended %d events", n-before)
	}
}
