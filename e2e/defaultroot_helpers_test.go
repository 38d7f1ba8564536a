package e2e

import (
	"strings"

	"github.com/lockledger/lockledger/internal/clitest"
)

// defaultRootEnv is the CLI's environment with no root given
// (LOCKLEDGER_ROOT, XDG_STATE_HOME unset) and HOME set to home, so that
// the CLI takes its default root.
func defaultRootEnv(home string) []string {
	var env []string
	for _, kv := range clitest.Env("") {
		if strings.HasPrefix(kv, "LOCKLEDGER_ROOT=") || strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "XDG_STATE_HOME=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home)
}
