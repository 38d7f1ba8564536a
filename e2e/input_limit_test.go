package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
)

// A secret file, standard input or a key file longer than the most it may
// hold is refused (exit 2, naming the input and the limit) with nothing
// recorded and the lock still held. The secret's input was cut at its
// limit and the part read taken for the whole, so a file of the secret's
// line and more released the lock; a key file was read however long it
// was (--verifier-key /dev/zero ran out of memory). Input of exactly the
// limit is read whole.
func TestInputPastItsLimitIsRefused(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	out := strings.Split(strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "deploy", "--holder", "none", "--print-release-secret").Stdout), "\n")
	if len(out) != 2 {
		t.Fatalf("acquire --print-release-secret printed %q", out)
	}
	rid, secret := out[0], out[1]
	dir := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// sized is the secret's line padded with comment lines to n bytes.
	sized := func(n int) string {
		s := secret + "\n"
		return s + strings.Repeat("#", n-len(s)-1) + "\n"
	}
	refused := func(r clitest.Result, what, field string) {
		t.Helper()
		if r.Code != 2 || !strings.Contains(r.Stderr, field) || !strings.Contains(r.Stderr, "more than 4096 bytes") {
			t.Fatalf("%s: exit %d, want 2 naming %s and its limit of 4096 bytes\n%s", what, r.Code, field, r.Stderr)
		}
	}
	before := clitest.EventCount(t, root)
	release := []string{"release", "deploy", "--request-id", rid, "--secret-file"}
	refused(clitest.Run(t, root, append(release, file("long-file", sized(4097)))...),
		"the secret's line and more, 4097 bytes in all", "--secret-file")
	refused(clitest.RunIn(t, root, sized(4097), append(release, "-")...),
		"the secret's line and more on standard input, 4097 bytes in all", "--secret-file")
	vkey := strings.TrimSpace(clitest.Must(t, 0, root, "keygen", "--name", "limit-test", "-o", filepath.Join(dir, "signing.key")).Stdout)
	refused(clitest.Run(t, root, "verify", "--verifier-key", file("long.vkey", vkey+"\n"+strings.Repeat("\n", 4096))),
		"a verifier key file of more than 4096 bytes", "--verifier-key")
	if n := clitest.EventCount(t, root); n != before {
		t.Fatalf("refused input recorded %d events", n-before)
	}
	if st := clitest.Must(t, 0, root, "status", "deploy").Stdout; !strings.Contains(st, "held") {
		t.Fatalf("refused input released the lock: %s", st)
	}
	// The limit itself is no refusal.
	clitest.Must(t, 0, root, append(release, file("exact", sized(4096)))...)
}
