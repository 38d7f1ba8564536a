package events_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/events"
)

// TestLockNameRefusalSaysWhatIsWrong: the rule of a refused lock name is
// what is wrong with it, in words, then the rule itself in words; never
// the pattern.
func TestLockNameRefusalSaysWhatIsWrong(t *testing.T) {
	for name, want := range map[string]string{
		"":                       "must not be empty",
		"Deploy":                 `uppercase letters are not allowed: 'D'; "deploy" would do`,
		"deploy-Prod_":           "uppercase letters are not allowed: 'P'",
		"DEPLOY_":                "uppercase letters are not allowed: 'D'",
		"-a":                     "must start with a letter or digit, not '-'",
		"_":                      "must start with a letter or digit, not '_'",
		"a-":                     "must end with a letter or digit, not '-'",
		strings.Repeat("a", 129): "is 129 characters long: longer than 128 characters is not allowed",
		"a b":                    "' ' is not allowed: only a-z 0-9 _ - are",
		"../x":                   `'/' is not allowed: only a-z 0-9 _ - are; a lock is a name, not a path (its lock file is ROOT/locks/NAME.lock); "x" would do`,
		"..x":                    "'.' is not allowed: only a-z 0-9 _ - are",
		"a/b":                    `'/' is not allowed: only a-z 0-9 _ - are; a lock is a name, not a path (its lock file is ROOT/locks/NAME.lock); "a-b" would do`,
		// A flock user's lock file: its base is the name.
		"/var/lock/Deploy-Prod.lock": `'/' is not allowed: only a-z 0-9 _ - are; a lock is a name, not a path (its lock file is ROOT/locks/NAME.lock); "deploy-prod" would do`,
		"./deploy.lock":              `'/' is not allowed: only a-z 0-9 _ - are; a lock is a name, not a path (its lock file is ROOT/locks/NAME.lock); "deploy" would do`,
		"/tmp/a.b.lock":              `'/' is not allowed: only a-z 0-9 _ - are; a lock is a name, not a path (its lock file is ROOT/locks/NAME.lock)`,
		"é":                          "'é' is not allowed: only a-z 0-9 _ - are",
		"a\x1b[31m":                  `'\x1b' is not allowed: only a-z 0-9 _ - are`,
		"a\u202eb":                   `'\u202e' is not allowed: only a-z 0-9 _ - are`,
		"a\xffb":                     `byte '\xff' (not UTF-8) is not allowed: only a-z 0-9 _ - are`,
	} {
		err := events.ValidateLockName(name)
		var inv *events.InvalidError
		if !errors.As(err, &inv) || inv.Field != "lock name" {
			t.Errorf("%q: %v, want an invalid lock name", name, err)
			continue
		}
		if !strings.HasPrefix(inv.Rule, want+" (a lock name is 1-128 of a-z 0-9 _ -") || strings.Contains(inv.Rule, "^") {
			t.Errorf("%q: rule %q, want %q and the rule in words", name, inv.Rule, want)
		}
	}
	if err := events.ValidateLockName("deploy-prod_2"); err != nil {
		t.Fatal(err)
	}
}
