package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/clitest"
)

// run heartbeats, so its default TTL is short: a crashed host's lock is
// free within a minute. acquire, whose lock may span CI steps with no
// process behind it, keeps 900 s.
func TestRunsDefaultTTLFreesACrashedHostsLockWithinAMinute(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	clitest.Must(t, 0, root, "run", "fleet", "--", "true")
	ttl := lastBody(t, root, "lock_acquired")["ttl_seconds"].(float64)
	if ttl < 15 || ttl > 60 {
		t.Fatalf("run's default ttl is %vs; want a crashed host's lock free within a minute", ttl)
	}
	clitest.Must(t, 0, root, "acquire", "ci-step", "--holder", "none")
	if ttl := lastBody(t, root, "lock_acquired")["ttl_seconds"].(float64); ttl != 900 {
		t.Fatalf("acquire's default ttl is %vs, want 900", ttl)
	}
}

// status names a holder whose pid cannot be probed from here, and when it
// turns stale.
func TestStatusSaysWhyAHolderCannotBeProbedAndWhenItTurnsStale(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	r := clitest.RunWith(t, root, []string{"LOCKLEDGER_HOST_ID=build-7"}, "", "acquire", "deploy", "--ttl", "120")
	if r.Code != 0 {
		t.Fatalf("acquire on another host: %d %s", r.Code, r.Stderr)
	}
	before := time.Now().Truncate(time.Second)
	var st struct {
		State          string `json:"state"`
		Unprobed       string `json:"unprobed"`
		StaleAt        string `json:"stale_at"`
		StaleInSeconds *int64 `json:"stale_in_seconds"`
	}
	out := clitest.Must(t, 0, root, "status", "deploy", "--json").Stdout
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	at, err := time.Parse(time.RFC3339, st.StaleAt)
	if st.State != "held" || st.Unprobed != "other_host" || err != nil || st.StaleInSeconds == nil ||
		*st.StaleInSeconds < 60 || *st.StaleInSeconds > 120 || at.Before(before.Add(60*time.Second)) || at.After(before.Add(121*time.Second)) {
		t.Fatalf("status --json of a holder on another host: %s", out)
	}
	text := clitest.Must(t, 0, root, "status", "deploy").Stdout
	for _, want := range []string{"not probed from here: on another host (build-7)", "stale at       " + st.StaleAt + " (in "} {
		if !strings.Contains(text, want) {
			t.Errorf("status lacks %q:\n%s", want, text)
		}
	}
	clitest.Must(t, 0, root, "acquire", "ci-step", "--holder", "none")
	out = clitest.Must(t, 0, root, "status", "ci-step", "--json").Stdout
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Unprobed != "no_process" {
		t.Fatalf("status --json of a lock no process holds: %s", out)
	}
}
