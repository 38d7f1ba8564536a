package cli_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/cli"
)

// TestRootHelpOpensWithWhatItIs: lockledger --help says what lockledger is
// and how to start, and leaves the refusals to the docs.
func TestRootHelpOpensWithWhatItIs(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := cli.Main([]string{"--help"}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("--help exited %d: %s", code, errOut.String())
	}
	help := out.String()
	if !strings.HasPrefix(help, "lockledger takes and releases locks") {
		t.Errorf("--help opens with %q", strings.SplitN(help, "\n", 2)[0])
	}
	start := strings.Index(help, "Start with:")
	if start < 0 || !strings.Contains(help[start:], "lockledger run NAME") {
		t.Errorf("--help shows no commands to start with:\n%s", help)
	}
	if lead := strings.Join(strings.SplitN(help, "\n", 20)[:19], "\n"); strings.Contains(lead, "refuses to touch") {
		t.Errorf("--help's first lines are about refusals:\n%s", lead)
	}
	if !strings.Contains(help, "Available Commands:") {
		t.Errorf("--help lists no commands:\n%s", help)
	}
}
