package schema_test

import (
	"encoding/json"
	"errors"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/schemaref"
	"github.com/lockledger/lockledger/schema"
)

// TestFastMatchesSchema is the differential test: every body of the
// corpus (valid bodies of every type and their mutations) against every
// schema, with both validators. Under -race, which slows these loops
// fourteen times and finds nothing in them (no goroutines but the two
// halves), it is skipped: make test runs it in full without -race.
func TestFastMatchesSchema(t *testing.T) {
	if raceEnabled() {
		t.Skip("make test runs the differential corpus without -race, which slows it fourteen times and finds nothing in it")
	}
	c := corpus(t)
	const least = 10
	for _, s := range validSeeds(t) {
		if err := schema.ValidateEvent(s.typ, s.body); err != nil {
			t.Errorf("valid seed %s refused: %v", s.name, err)
		}
	}
	// Two halves in parallel: the library is slow under -race.
	var mu sync.Mutex
	accepted := map[events.Type]int{}
	refused := 0
	t.Run("corpus", func(t *testing.T) {
		for half := range 2 {
			t.Run(strconv.Itoa(half), func(t *testing.T) {
				t.Parallel()
				acc, ref := diffCorpus(t, c, half)
				mu.Lock()
				defer mu.Unlock()
				for k, n := range acc {
					accepted[k] += n
				}
				refused += ref
			})
		}
	})
	t.Logf("%d bodies: %d refused, accepted per schema %v", len(c), refused, accepted)
	for _, typ := range allTypes {
		if accepted[typ] < least {
			t.Errorf("only %d accepted bodies for %s: the corpus does not exercise it", accepted[typ], typ)
		}
	}
}

// diffCorpus compares the validators on every other body of c, from half.
func diffCorpus(t *testing.T, c []seedBody, half int) (accepted map[events.Type]int, refused int) {
	accepted = map[events.Type]int{}
	for i := half; i < len(c); i += 2 {
		s := c[i]
		types := []events.Type{s.typ}
		if s.cross {
			types = allTypes
		}
		for _, typ := range types {
			ref, panicked := refValidate(typ, s.body)
			fast := schema.ValidateEvent(typ, s.body)
			if panicked {
				if fast == nil {
					t.Errorf("%s as %s: the library panics (%v), ValidateEvent accepts", s.name, typ, ref)
				}
				continue
			}
			if (ref == nil) != (fast == nil) {
				t.Errorf("%s as %s: the library: %v; ValidateEvent: %v\nbody: %.600q", s.name, typ, ref, fast, s.body)
				continue
			}
			if fast != nil {
				if !errors.Is(fast, schema.ErrSchema) {
					t.Errorf("%s as %s: %v does not wrap schema.ErrSchema", s.name, typ, fast)
				}
				refused++
			} else {
				accepted[typ]++
			}
		}
	}
	return accepted, refused
}

// TestFastNamesFieldAndRule: errors carry the JSON pointer and the keyword.
func TestFastNamesFieldAndRule(t *testing.T) {
	seeds := validSeeds(t)
	find := func(name string) seedBody {
		for _, s := range seeds {
			if s.name == name {
				return s
			}
		}
		t.Fatalf("no seed %q", name)
		return seedBody{}
	}
	set := func(s seedBody, p fieldPath, raw string) []byte {
		root := decodeGeneric(t, s.body)
		edit(root, p, func(parent any, key any) {
			switch parent := parent.(type) {
			case map[string]any:
				if raw == "" {
					delete(parent, key.(string))
				} else {
					parent[key.(string)] = json.RawMessage(raw)
				}
			case []any:
				parent[key.(int)] = json.RawMessage(raw)
			}
		})
		return encode(t, root)
	}
	for _, c := range []struct {
		seed string
		path fieldPath
		raw  string
		want []string
	}{
		{"heartbeat_failed", fieldPath{"consecutive_failures"}, `0`, []string{"/consecutive_failures:", "minimum"}},
		{"heartbeat_failed", fieldPath{"consecutive_failures"}, `1.5`, []string{"/consecutive_failures:", "type", "integer"}},
		{"heartbeat_failed", fieldPath{"error"}, `null`, []string{"/error:", "type", "string", "null"}},
		{"heartbeat_failed", fieldPath{"error"}, ``, []string{"required", `"error"`}},
		{"heartbeat_failed", fieldPath{"sneaky"}, `1`, []string{"unevaluatedProperties", `"sneaky"`}},
		{"heartbeat", fieldPath{"lock_name"}, `"Deploy"`, []string{"/lock_name:", "pattern"}},
		{"heartbeat", fieldPath{"type"}, `"lock_acquired"`, []string{"/type:", "const"}},
		{"heartbeat", fieldPath{"type"}, `"nope"`, []string{"/type:", "enum"}},
		{"heartbeat", fieldPath{"schema_version"}, `2`, []string{"/schema_version:", "const"}},
		{"stolen", fieldPath{"previous_lock", "created_at"}, `"2026-02-30T00:00:00Z"`, []string{"/previous_lock/created_at:", "format", "date-time"}},
		{"stolen", fieldPath{"previous_lock", "pid"}, `-1`, []string{"/previous_lock/pid:", "minimum"}},
		{"stolen", fieldPath{"previous_lock", "extra"}, `1`, []string{"additionalProperties", `"extra"`}},
		{"stolen", fieldPath{"previous_lock_hash"}, `"sha256:x"`, []string{"/previous_lock_hash:", "pattern"}},
		{"stolen+targets+note", fieldPath{"targets", 1, "path"}, `"relative"`, []string{"/targets/1/path:", "pattern"}},
		{"stolen+targets+note", fieldPath{"targets", 0, "format"}, `"zip"`, []string{"/targets/0/format:", "enum"}},
		{"acquired", fieldPath{"metadata", "k"}, `7`, []string{"/metadata/k:", "type", "string"}},
		{"released failure", fieldPath{"exit_code"}, `256`, []string{"/exit_code:", "maximum"}},
		{"released", fieldPath{"held_duration_seconds"}, `-0.5`, []string{"/held_duration_seconds:", "minimum"}},
		{"blocked", fieldPath{"held_by", "pid"}, `"7"`, []string{"/held_by/pid:", "type", "integer"}},
		{"blocked", fieldPath{"held_by", "request_id"}, `""`, []string{"/held_by/request_id:", "minLength"}},
		{"blocked", fieldPath{"state"}, `"free"`, []string{"/state:", "enum"}},
		{"blocked by an unreadable file", fieldPath{"unreadable_file", "size_bytes"}, `-1`, []string{"/unreadable_file/size_bytes:", "minimum"}},
		{"blocked by an unreadable file", fieldPath{"unreadable_file", "path"}, `"deploy.lock"`, []string{"/unreadable_file/path:", "pattern"}},
		{"blocked by an unreadable file", fieldPath{"unreadable_file", "modified"}, `"1970"`, []string{"/unreadable_file/modified:", "format", "date-time"}},
		{"blocked by an unreadable file", fieldPath{"unreadable_file", "modified"}, ``, []string{"required", `"modified"`}},
		{"refused steal unreadable", fieldPath{"unreadable_file", "pid"}, `0`, []string{"additionalProperties", `"pid"`}},
		{"lock file", fieldPath{"ttl_seconds"}, `0`, []string{"/ttl_seconds:", "minimum"}},
		{"lock file", fieldPath{"pid"}, `7e0`, []string{"/pid:", "format", "int64", "without fraction or exponent"}},
		{"heartbeat", fieldPath{"seq"}, `2.0`, []string{"/seq:", "format", "int64"}},
		{"heartbeat", fieldPath{"pid"}, `99999999999999999999`, []string{"/pid:", "format", "int64"}},
		{"heartbeat", fieldPath{"schema_version"}, `1.0`, []string{"/schema_version:", "format", "int64"}},
		{"stolen", fieldPath{"previous_lock", "pid"}, `77.0`, []string{"/previous_lock/pid:", "format", "int64"}},
		{"stolen", fieldPath{"previous_lock", "metadata", "ticket"}, `1`, []string{"/previous_lock/metadata/ticket:", "type", "string"}},
		{"released", fieldPath{"held_duration_seconds"}, `1e400`, []string{"/held_duration_seconds:", "format", "float64"}},
		{"blocked", fieldPath{"held_by", "pid"}, `77e0`, []string{"/held_by/pid:", "format", "int64"}},
		{"refused release", fieldPath{"action"}, `"acquire"`, []string{"/action:", "enum"}},
		{"refused release", fieldPath{"action"}, `"killed"`, []string{"/action:", "enum"}},
		{"refused release", fieldPath{"error"}, `""`, []string{"/error:", "minLength"}},
		{"refused release", fieldPath{"error"}, ``, []string{"required", `"error"`}},
		{"refused release", fieldPath{"state"}, `"gone"`, []string{"/state:", "enum"}},
		{"refused release", fieldPath{"held_by", "host_id"}, `7`, []string{"/held_by/host_id:", "type", "string"}},
		{"refused release", fieldPath{"waited_seconds"}, `1`, []string{"unevaluatedProperties", `"waited_seconds"`}},
		{"projected everything", fieldPath{"changes"}, `[]`, []string{"/changes:", "minItems"}},
		{"projected everything", fieldPath{"changes", 1}, `""`, []string{"/changes/1:", "minLength"}},
		{"projected everything", fieldPath{"changes", 0}, `7`, []string{"/changes/0:", "type", "string"}},
		{"projected everything", fieldPath{"changes"}, ``, []string{"required", `"changes"`}},
		{"projected everything", fieldPath{"moved_aside"}, `"x.corrupt"`, []string{"/moved_aside:", "pattern"}},
		{"projected everything", fieldPath{"first_bad_seq"}, `0`, []string{"/first_bad_seq:", "minimum"}},
		{"projected everything", fieldPath{"broken_chain_accepted"}, `"yes"`, []string{"/broken_chain_accepted:", "type", "boolean"}},
		{"job processes killed", fieldPath{"pids"}, `[]`, []string{"/pids:", "minItems"}},
		{"job processes killed", fieldPath{"pids", 2}, `0`, []string{"/pids/2:", "minimum"}},
		{"job processes killed", fieldPath{"pids", 0}, `4.5`, []string{"/pids/0:", "type", "integer"}},
		{"job processes killed", fieldPath{"pids", 1}, `7.0`, []string{"/pids/1:", "format", "int64"}},
		{"job processes killed", fieldPath{"action"}, `"release"`, []string{"/action:", "enum"}},
		{"job processes killed", fieldPath{"job_request_id"}, `"req a"`, []string{"/job_request_id:", "pattern"}},
		{"job processes killed", fieldPath{"note"}, `null`, []string{"/note:", "type", "string"}},
		{"released everything", fieldPath{"superseded_by", "pid"}, `"1"`, []string{"/superseded_by/pid:", "type", "integer"}},
		{"released everything", fieldPath{"superseded_by_format"}, `"zip"`, []string{"/superseded_by_format:", "enum"}},
		{"released everything", fieldPath{"superseded_by_path"}, `"/"`, []string{"/superseded_by_path:", "minLength"}},
		{"released everything", fieldPath{"superseded_by_path"}, `"rel/x"`, []string{"/superseded_by_path:", "pattern"}},
		{"stolen", fieldPath{"reason"}, `"reclaim"`, []string{"/reason:", "enum"}},
		{"heartbeat", fieldPath{"uid"}, `-1`, []string{"/uid:", "minimum"}},
		{"heartbeat", fieldPath{"uid"}, `4294967296`, []string{"/uid:", "maximum"}},
		{"heartbeat", fieldPath{"uid"}, `"1000"`, []string{"/uid:", "type", "integer"}},
		{"heartbeat", fieldPath{"uid"}, `1000.0`, []string{"/uid:", "format", "int64"}},
		{"heartbeat", fieldPath{"user"}, `null`, []string{"/user:", "type", "string"}},
		{"heartbeat", fieldPath{"user"}, `"` + strings.Repeat("u", 257) + `"`, []string{"/user:", "maxLength"}},
		{"heartbeat", fieldPath{"user"}, ``, []string{"dependentRequired", `"user"`}},
		{"heartbeat", fieldPath{"uid"}, ``, []string{"dependentRequired", `"uid"`}},
		{"heartbeat (before uid)", fieldPath{"user"}, `"ci"`, []string{"dependentRequired", `"uid"`}},
		{"heartbeat", fieldPath{"lock_name"}, ``, []string{"required", `"lock_name"`}},
		{"exported", fieldPath{"lock_name"}, `"deploy-prod"`, []string{`"lock_name"`, "not allowed"}},
		{"exported", fieldPath{"destination"}, `"audit.jsonl"`, []string{"/destination:", "anyOf"}},
		{"exported", fieldPath{"destination"}, `""`, []string{"/destination:", "anyOf"}},
		{"exported", fieldPath{"format"}, `"json"`, []string{"/format:", "enum"}},
		{"exported", fieldPath{"events"}, `-1`, []string{"/events:", "minimum"}},
		{"exported", fieldPath{"events"}, ``, []string{"required", `"events"`}},
		{"exported everything", fieldPath{"since"}, `"2026-11-22T00:00:00Z"`, []string{"/since:", "pattern"}},
		{"exported everything", fieldPath{"first_seq"}, `0`, []string{"/first_seq:", "minimum"}},
		{"verified", fieldPath{"result"}, `"success"`, []string{"/result:", "enum"}},
		{"verified", fieldPath{"head_hash"}, `"sha256:00"`, []string{"/head_hash:", "pattern"}},
		{"verified", fieldPath{"problems"}, ``, []string{"required", `"problems"`}},
		{"verified everything", fieldPath{"file"}, `"ledger.jsonl"`, []string{"/file:", "pattern"}},
		{"ledger projected", fieldPath{"result"}, `"failed"`, []string{"/result:", "enum"}},
		{"ledger projected", fieldPath{"rows_changed"}, `-2`, []string{"/rows_changed:", "minimum"}},
		{"ledger projected", fieldPath{"locks"}, ``, []string{"required", `"locks"`}},
		{"released", fieldPath{"result"}, `"ok"`, []string{"/result:", "enum"}},
	} {
		s := find(c.seed)
		body := set(s, c.path, c.raw)
		if ref := schemaref.ValidateEvent(s.typ, body); ref == nil {
			t.Fatalf("%s %v=%s: the library accepts it; fix the test", c.seed, c.path, c.raw)
		}
		err := schema.ValidateEvent(s.typ, body)
		var se *schema.Error
		if !errors.As(err, &se) || !errors.Is(err, schema.ErrSchema) || se.Schema != string(s.typ) {
			t.Errorf("%s %v=%s: %v (%T), want a *schema.Error for %s", c.seed, c.path, c.raw, err, err, s.typ)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s %v=%s: %q does not say %q", c.seed, c.path, c.raw, err, w)
			}
		}
	}
	if err := schema.ValidateEvent("no_such", []byte(`{}`)); !errors.Is(err, schema.ErrSchema) || !strings.Contains(err.Error(), "no such schema") {
		t.Errorf("unknown type: %v", err)
	}
	if err := schema.ValidateEvent(events.LockHeartbeat, []byte(`{"seq":`)); !errors.Is(err, schema.ErrSchema) || !strings.Contains(err.Error(), "not JSON") {
		t.Errorf("not JSON: %v", err)
	}
	hb := find("heartbeat").body
	if err := schema.ValidateEvent(events.LockHeartbeat, append(hb[:len(hb):len(hb)], "} x"...)); !errors.Is(err, schema.ErrSchema) ||
		!strings.Contains(err.Error(), "trailing data") {
		t.Errorf("trailing data: %v", err)
	}
}

// TestFastAllocations: a valid canonical body costs no allocation.
func TestFastAllocations(t *testing.T) {
	if testing.Short() {
		t.Skip()
	}
	for _, s := range validSeeds(t) {
		allocs := testing.AllocsPerRun(50, func() {
			if err := schema.ValidateEvent(s.typ, s.body); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > 0 {
			t.Errorf("%s: %.0f allocations per valid body", s.name, allocs)
		}
	}
}

func BenchmarkValidate(b *testing.B) {
	seeds := validSeeds(b)
	for _, impl := range []struct {
		name string
		f    func(events.Type, []byte) error
	}{{"library", schemaref.ValidateEvent}, {"fast", schema.ValidateEvent}} {
		for _, s := range seeds {
			b.Run(impl.name+"/"+strings.ReplaceAll(s.name, " ", "_"), func(b *testing.B) {
				b.SetBytes(int64(len(s.body)))
				for b.Loop() {
					if err := impl.f(s.typ, s.body); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// raceEnabled reports whether the test binary is built with -race.
func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	return ok && slices.Contains(bi.Settings, debug.BuildSetting{Key: "-race", Value: "true"})
}
