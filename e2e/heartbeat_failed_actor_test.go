package e2e

import (
	"strings"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
)

// TestHeartbeatFailedAfterAStealIsTheHolders: a heartbeat of ci-bot's
// holding, sent from a shell whose actor is another (tester) after the
// lock was stolen, records heartbeat_failed under the holding's actor and
// pid, as its heartbeats were, and the shell that found the loss in
// recorded_by.
func TestHeartbeatFailedAfterAStealIsTheHolders(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "deploy", "--holder", "none", "--ttl", "5m", "--actor", "ci-bot").Stdout)
	clitest.Must(t, 0, root, "heartbeat", "deploy", "--request-id", rid)
	clitest.Must(t, 0, root, "steal", "deploy", "--active", "--yes", "--reason", "INC-42", "--actor", "oncall")
	clitest.Must(t, 5, root, "heartbeat", "deploy", "--request-id", rid)
	got := clitest.Strings(t, root, `SELECT actor || ' ' || json_extract(body, '$.pid') || ' ' || json_extract(body, '$.lock_lost') || ' ' ||
		coalesce(json_extract(body, '$.recorded_by.actor'), '-') || ' ' || coalesce(json_extract(body, '$.recorded_by.pid') > 0, '-') || ' ' ||
		coalesce(json_extract(body, '$.recorded_by.host_id'), '-')
		FROM events WHERE type = 'heartbeat_failed' AND request_id = '`+rid+`'`)
	if want := "ci-bot 0 1 tester 1 " + clitest.Strings(t, root, `SELECT json_extract(body, '$.host_id') FROM events WHERE seq = 1`)[0]; len(got) != 1 || got[0] != want {
		t.Fatalf("heartbeat_failed (actor pid lock_lost recorded_by.actor recorded_by.pid>0 recorded_by.host_id) = %q, want %q", got, want)
	}
	clitest.Verify(t, 0, root)
	if tl := clitest.Must(t, 0, root, "timeline", "--lock", "deploy", "--type", "heartbeat_failed").Stdout; !strings.Contains(tl, "recorded by tester") {
		t.Errorf("the timeline does not say who recorded the failure:\n%s", tl)
	}
}
