package e2e

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
)

// TestLockNameRefusedInWords: a refused lock name is told what is wrong
// with it in words, on one line, exit 2, nothing recorded.
func TestLockNameRefusedInWords(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, c := range []struct{ name, says string }{
		{"Deploy-prod", `uppercase letters are not allowed: 'D'; "deploy-prod" would do`},
		{"-deploy", "must start with a letter or digit, not '-'"},
		{"deploy_", "must end with a letter or digit, not '_'"},
		{strings.Repeat("d", 129), "is 129 characters long: longer than 128 characters is not allowed"},
		{"deploy prod", "' ' is not allowed: only a-z 0-9 _ - are"},
		{"deploy.lock", "'.' is not allowed"},
		// flock's habit, a lock file's path: the name its base would be.
		{"/var/lock/deploy.lock", `a lock is a name, not a path (its lock file is ROOT/locks/NAME.lock); "deploy" would do`},
		{"", "must not be empty"},
		{"a\nb", `'\n' is not allowed`},
	} {
		r := clitest.Run(t, root, "acquire", "--", c.name)
		if r.Code != 2 || !strings.Contains(r.Stderr, c.says) || strings.Contains(r.Stderr, "^[a-z0-9]") ||
			strings.Count(r.Stderr, "\n") != 1 || !strings.Contains(r.Stderr, "a lock name is 1-128 of a-z 0-9 _ -") {
			t.Errorf("acquire %q: exit %d, stderr %q; want 2 saying %q in words", c.name, r.Code, r.Stderr, c.says)
		}
	}
	if n := clitest.EventCount(t, root); n != 0 {
		t.Fatalf("%d events after refused names", n)
	}
}

// TestUnknownCommandHintOnOneLine: cobra's "Did you mean" hint is one
// line, not a message broken over several (shown as \n in the escaped
// error line).
func TestUnknownCommandHintOnOneLine(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for args, want := range map[string]string{
		"acquir deploy":              `lockledger: unknown command "acquir" for "lockledger"; did you mean "acquire"? (see --help)` + "\n",
		"--root " + root + " relese": `lockledger: unknown command "relese" for "lockledger"; did you mean "release"? (see --help)` + "\n",
		"frobnicate":                 `lockledger: unknown command "frobnicate" for "lockledger" (see --help)` + "\n",
	} {
		r := clitest.Run(t, root, strings.Fields(args)...)
		if r.Code != 2 || r.Stderr != want {
			t.Errorf("lockledger %s: exit %d, stderr %q; want 2 and %q", args, r.Code, r.Stderr, want)
		}
	}
}

// TestTTLZeroNamesTheFlag: --ttl 0 is refused naming --ttl, as typed.
func TestTTLZeroNamesTheFlag(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, args := range [][]string{{"acquire", "deploy", "--ttl", "0"}, {"run", "deploy", "--ttl", "0s", "true"}, {"steal", "deploy", "--ttl", "0", "--reason", "r"}} {
		r := clitest.Run(t, root, args...)
		if r.Code != 2 || !strings.Contains(r.Stderr, `--ttl "`+args[3]+`": must be at least 1s`) {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming --ttl", args, r.Code, r.Stderr)
		}
	}
}

// TestUnlimitedSharedLockLogsUnlimited: a shared hold with no --limit is
// logged as limit=unlimited, not limit=0.
func TestUnlimitedSharedLockLogsUnlimited(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	r := clitest.Must(t, 0, root, "acquire", "reports", "--shared", "--pid", self)
	if !strings.Contains(r.Stderr, "limit=unlimited") || strings.Contains(r.Stderr, "limit=0") {
		t.Fatalf("shared acquire logged %q, want limit=unlimited", r.Stderr)
	}
	r = clitest.Must(t, 0, root, "acquire", "slots", "--limit", "2", "--pid", self)
	if !strings.Contains(r.Stderr, "limit=2") {
		t.Fatalf("semaphore acquire logged %q, want limit=2", r.Stderr)
	}
}
