package e2e

// The signing and witness global flags show in the help of the commands
// that write, and only there; every command still parses them.

import (
	"strings"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
)

var signingFlagNames = []string{"--signing-key", "--witness ", "--witness-url", "--unsigned", "--checkpoint-every", "--checkpoint-interval"}

func TestSigningFlagsOnlyInTheHelpOfWriters(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, args := range [][]string{{"status"}, {"list"}, {"history"}, {"timeline"}, {"who"}, {"replay"}, {"metrics"},
		{"prove"}, {"verify-proof"}, {"keygen"}, {"version"}} {
		r := clitest.Must(t, 0, root, append(args, "--help")...)
		for _, f := range signingFlagNames {
			if strings.Contains(r.Stdout, f) {
				t.Errorf("%s --help shows %s, which it does not use:\n%s", args[0], f, r.Stdout)
			}
		}
	}
	if r := clitest.Must(t, 0, root, "--help"); strings.Contains(r.Stdout, "      --signing-key") {
		t.Errorf("lockledger --help lists --signing-key among its flags:\n%s", r.Stdout)
	}
	for _, args := range [][]string{{"acquire"}, {"release"}, {"heartbeat"}, {"steal"}, {"run"}, {"init"}, {"project"},
		{"checkpoint"}, {"export"}, {"verify"}, {"import"}, {"trust", "adopt"}} {
		r := clitest.Must(t, 0, root, append(args, "--help")...)
		for _, f := range signingFlagNames {
			if !strings.Contains(r.Stdout, f) {
				t.Errorf("%s --help does not show %s:\n%s", strings.Join(args, " "), f, r.Stdout)
			}
		}
	}
}

// A read command given a signing flag (an alias that passes it everywhere)
// still runs as before: the flag is parsed and not used.
func TestReadCommandsStillAcceptSigningFlags(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	clitest.Must(t, 0, root, "acquire", "a", "--pid", "1", "--ttl", "1h")
	r := clitest.Must(t, 0, root, "status", "a", "--checkpoint-every", "5", "--unsigned", "--witness", t.TempDir())
	if !strings.Contains(r.Stdout, "held") {
		t.Errorf("status with signing flags: %q", r.Stdout)
	}
	r = clitest.Run(t, root, "status", "a", "--checkpoint-every")
	if r.Code != 2 || !strings.Contains(r.Stderr, "--checkpoint-every") {
		t.Errorf("status --checkpoint-every without its value: exit %d, want 2 naming the flag; stderr %s", r.Code, r.Stderr)
	}
}
