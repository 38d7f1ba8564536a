package e2e

import (
	"encoding/json"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/clitest"
)

// typesSince lists the types of the events after the first n.
func typesSince(t *testing.T, root string, n int) []string {
	t.Helper()
	return clitest.Types(t, root)[n:]
}

// jsonOut parses a command's --json answer.
func jsonOut(t *testing.T, r clitest.Result) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.Stdout), &m); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, r.Stdout)
	}
	return m
}

func TestStaleRefusalWhileWaitingIsRecordedAsBlocked(t *testing.T) {
	for _, args := range [][]string{
		{"acquire", "nightly", "--wait", "30s", "--json"},
		{"run", "nightly", "--wait", "30s", "--json", "--", "true"},
	} {
		t.Run(args[0], func(t *testing.T) {
			root := t.TempDir()
			self := strconv.Itoa(os.Getpid())
			rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "nightly", "--ttl", "1", "--pid", self).Stdout)
			awaitState(t, root, "nightly", "stale", 15*time.Second)
			n := clitest.EventCount(t, root)
			r := clitest.Must(t, 4, root, args...)
			if got := jsonOut(t, r); got["error"] != "lock_stale" {
				t.Fatalf("answer: %v, want lock_stale", got)
			}
			if got := typesSince(t, root, n); !reflect.DeepEqual(got, []string{"acquire_blocked"}) {
				t.Fatalf("events after a stale refusal under --wait: %v, want one acquire_blocked", got)
			}
			b := lastBody(t, root, "acquire_blocked")
			waited, ok := b["waited_seconds"].(float64)
			if b["state"] != "stale" || !ok || waited < 0 || b["held_by"].(map[string]any)["request_id"] != rid {
				t.Fatalf("acquire_blocked: %v, want state stale, waited_seconds, held by %s", b, rid)
			}
			assertChain(t, root)
		})
	}
}
