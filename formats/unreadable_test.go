package formats

import (
	"errors"
	"testing"
)

// Only a file at the path where a tool keeps its locks, in a format whose
// tool takes an unreadable lock over, may be taken over unreadable.
func TestTakesOverUnreadable(t *testing.T) {
	perr := malformed("x", "broken")
	cases := []struct {
		f    Format
		path string
		want bool
	}{
		{BSO, "/srv/app/.sprint-running", true},
		{BSO, "/srv/app/config.yaml", false},
		{BSO, "/srv/app/.sprint-running.bak", false},
		{GitClaw, "/repo/.GITCLAW/state/locks/42.lock", true},
		{GitClaw, "/repo/.GITCLAW/state/locks/state.json", false},
		{GitClaw, "/repo/.GITCLAW/state/42.lock", false},
		{GitClaw, "/repo/.GITCLAW/state/locks/x42.lock", false},
		{TowerFleet, "/srv/locks/a.lock", false},
		{Beads, "/repo/.beads/.exclusive-lock", false},
		{Prodigy, "/home/u/.prodigy/resume_locks/j.lock", false},
	}
	for _, c := range cases {
		if got := TakesOverUnreadable(c.f, c.path, perr); got != c.want {
			t.Errorf("TakesOverUnreadable(%s, %s) = %v, want %v", c.f.Name(), c.path, got, c.want)
		}
	}
	if !errors.Is(perr, ErrMalformed) {
		t.Fatal("malformed does not wrap ErrMalformed")
	}
}
