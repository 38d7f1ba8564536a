package ledger

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestOptionsRefuseWhatTheySay: each checked option refuses its bad
// argument with its message, changing nothing, and applies a good one.
func TestOptionsRefuseWhatTheySay(t *testing.T) {
	for _, tc := range []struct {
		opt  Option
		want string
	}{
		{WithBusyTimeout(0), "busy timeout 0s: must be at least 1ms"},
		{WithOpenWait(-time.Second), "WithOpenWait(-1s): must not be negative"},
		{WithPoolSize(0), "WithPoolSize(0): must be between 1 and 1000"},
		{WithPoolSize(1001), "WithPoolSize(1001): must be between 1 and 1000"},
		{WithHost(Host{}), "WithHost: empty host id"},
		{WithHost(Host{ID: "a\nb"}), "host id"},
		{WithDatabase("mysql://x"), "must be a postgres:// or postgresql:// URL"},
		{WithGroup(-1), "must be a group id of 0 or more"},
		{WithCheckpointPolicy(-1, 0), "must be at least 1 event"},
		{WithCheckpointPolicy(0, -time.Second), "must not be negative"},
		{WithLogger(nil), "WithLogger(nil)"},
		{WithTrustedKeys(nil), "WithTrustedKeys(nil)"},
	} {
		var c config
		if err := tc.opt(&c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("option error %v, want one saying %q", err, tc.want)
		}
		if c.busy != 0 || c.openWait != 0 || c.poolSize != 0 || c.host != nil || c.database != "" || c.group != nil ||
			c.signing.every != 0 || c.signing.interval != 0 || c.logger != nil || c.signing.trusted != nil {
			t.Errorf("a refused option (%q) changed the config: %+v", tc.want, c)
		}
	}

	c := config{signing: signing{every: DefaultCheckpointEvery, interval: DefaultCheckpointInterval}}
	for _, o := range []Option{WithBusyTimeout(time.Second), WithOpenWait(2 * time.Second), WithPoolSize(3),
		WithHost(Host{ID: "h"}), WithDatabase("postgres://x/y"), WithGroup(5), WithCheckpointPolicy(0, 0)} {
		if err := o(&c); err != nil {
			t.Fatal(err)
		}
	}
	if c.busy != time.Second || c.openWait != 2*time.Second || c.poolSize != 3 || c.host.ID != "h" ||
		c.database != "postgres://x/y" || *c.group != 5 {
		t.Errorf("options not applied: %+v", c)
	}
	if c.signing.every != DefaultCheckpointEvery || c.signing.interval != DefaultCheckpointInterval {
		t.Errorf("WithCheckpointPolicy(0, 0) changed the defaults: every %d, interval %s", c.signing.every, c.signing.interval)
	}
	if err := WithCheckpointPolicy(7, 0)(&c); err != nil || c.signing.every != 7 || c.signing.interval != DefaultCheckpointInterval {
		t.Errorf("WithCheckpointPolicy(7, 0): %v, every %d, interval %s", err, c.signing.every, c.signing.interval)
	}
	if err := WithCheckpointPolicy(0, time.Hour)(&c); err != nil || c.signing.every != 7 || c.signing.interval != time.Hour {
		t.Errorf("WithCheckpointPolicy(0, 1h): %v, every %d, interval %s", err, c.signing.every, c.signing.interval)
	}
	if !errors.Is(WithGroup(-1)(&config{}), ErrInvalid) || !errors.Is(WithDatabase("x")(&config{}), ErrInvalid) {
		t.Error("WithGroup's and WithDatabase's refusals are not ErrInvalid (bad input, exit 2)")
	}
}
