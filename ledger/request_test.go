package ledger

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/schema"
)

// TestAcquireRequestValidate: every rule of a request's fields is in
// Validate, and each refusal names its field and its rule.
func TestAcquireRequestValidate(t *testing.T) {
	t.Parallel()
	ok := AcquireRequest{Lock: "x", TTL: time.Minute}
	with := func(f func(*AcquireRequest)) AcquireRequest { r := ok; f(&r); return r }
	for _, c := range []struct {
		req   AcquireRequest
		field string
		rule  string
	}{
		{ok, "", ""},
		{with(func(r *AcquireRequest) { r.Lock = "X" }), "lock name", "uppercase"},
		{with(func(r *AcquireRequest) { r.TTL = 0 }), "ttl", "at least 1s"},
		{with(func(r *AcquireRequest) { r.TTL = 1500 * time.Millisecond }), "ttl", "whole seconds"},
		{with(func(r *AcquireRequest) { r.TTL = MaxTTL + time.Second }), "ttl", "at most"},
		{with(func(r *AcquireRequest) { r.Limit = -1 }), "limit", LimitRule},
		{with(func(r *AcquireRequest) { r.Limit = schema.MaxLimit + 1 }), "limit", LimitRule},
		{with(func(r *AcquireRequest) { r.Limit = schema.MaxLimit }), "", ""},
		{with(func(r *AcquireRequest) { r.Shared, r.Targets = true, []events.Target{{Format: "bso", Path: "/p"}} }), "file", "one holder"},
		{with(func(r *AcquireRequest) { r.Limit, r.Reclaim = 2, true }), "reclaim", "--shared or --limit"},
		{with(func(r *AcquireRequest) { r.NoProcess, r.Targets = true, []events.Target{{Format: "bso", Path: "/p"}} }), "holder", "--file"},
		{with(func(r *AcquireRequest) { r.MaxAge = -time.Second }), "max age", "negative"},
		{with(func(r *AcquireRequest) { r.Intent = "a\nb" }), "intent", "control"},
		{with(func(r *AcquireRequest) { r.Metadata = map[string]string{"": "v"} }), "metadata key", ""},
	} {
		err := c.req.Validate()
		var inv *events.InvalidError
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%+v: %v, want valid", c.req, err)
		case c.field != "" && (!errors.As(err, &inv) || !strings.HasPrefix(inv.Field, c.field) || !strings.Contains(inv.Rule, c.rule)):
			t.Errorf("%+v: %v, want events.Invalid of %s saying %q", c.req, err, c.field, c.rule)
		}
	}
}
