package formats

import (
	"testing"
	"time"
)

// Every FuzzParse target is seeded with the document's own examples, the
// golden files and the malformed cases of the format's tests; the body
// (fuzzParse) checks that Parse never panics, errors wrap ErrMalformed,
// Judge takes whatever Parse gave, and Render∘Parse is stable.

func addSeeds(f *testing.F, seeds ...[]string) {
	for _, list := range seeds {
		for _, s := range list {
			f.Add([]byte(s))
		}
	}
}

func FuzzParseTowerFleet(f *testing.F) {
	addSeeds(f, []string{towerFleetSpecExample, `{"lock_version":"v1"}`, `{}`, ``},
		[]string{`{"lock_version":"v1","lock_name":"x","request_id":"r","actor":"a","intent":"i","intent_version":"1","host_id":"h","pid":1,"created_at":"2025-12-18T10:30:10.5+01:00","last_heartbeat_at":"2025-12-18T10:30:10Z","ttl_seconds":60,"metadata":{"n":3}}`})
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParse(t, TowerFleet, data) })
}

func FuzzParseBSO(f *testing.F) {
	addSeeds(f, []string{bsoDocExample, bsoGolden, "pid: 1\nstarted_at: 2026-02-07T22:30:00Z\n", "&a [*a]", "? [a]\n: b\n", "!!binary aGk=", "%YAML 1.2\n---\n{}"}, bsoCorrupt)
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzParse(t, BSO, data)
		st := BSOCheck(data, true, utc("2026-02-08T00:00:00Z"), Env{Probe: probeAlive})
		switch st.Status {
		case BSOStatusBlocked, BSOStatusZombieDetected:
		default:
			t.Fatalf("BSOCheck status %q", st.Status)
		}
	})
}

func FuzzParseBeads(f *testing.F) {
	addSeeds(f, []string{beadsDocExample, beadsGolden, beadsShellExample}, beadsCorrupt)
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParse(t, Beads, data) })
}

func FuzzParseProdigy(f *testing.F) {
	addSeeds(f, []string{prodigyGolden, prodigyTestExample}, prodigyCorrupt)
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParse(t, Prodigy, data) })
}

func FuzzParseGitClaw(f *testing.F) {
	addSeeds(f, []string{gitclawGolden, gitclawLocalExample, `{"acquiredAt":1770503400123,"runId":99}`}, gitclawCorrupt)
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParse(t, GitClaw, data) })
}

// FuzzRenderBSO: any strings BSO is given render to YAML that parses back
// to the same values (the hand-written double-quoted escaping is right).
func FuzzRenderBSO(f *testing.F) {
	f.Add("sprint-2026-02-07-001", "epic5", 12345)
	f.Add("a\"b\\c\n\t\x00", "\u2028\ufeff\u0085#: -", 1)
	f.Fuzz(func(t *testing.T, session, epic string, pid int) {
		h := Holder{RequestID: session, Intent: epic, PID: pid, CreatedAt: time.Unix(1770503400, 0)}
		b, err := BSO.Render(h)
		if err != nil {
			if pid >= 1 {
				t.Fatalf("Render: %v", err)
			}
			return
		}
		got, err := BSO.Parse(b)
		if err != nil {
			if pid > 1<<31-1 {
				return // beyond any pid; Parse refuses it
			}
			t.Fatalf("Parse(Render): %v\n%q", err, b)
		}
		wantID := toValid(session)
		if wantID == "" {
			wantID = ForeignRequestID(NameBSO, pid, h.CreatedAt)
		}
		if got.RequestID != wantID || got.Intent != toValid(epic) || got.PID != pid {
			t.Fatalf("Parse(Render) = %+v from %q", got, b)
		}
	})
}

// FuzzRenderJSON: the hand-written serde/JavaScript string escaping gives
// JSON that reads back as the same string.
func FuzzRenderJSON(f *testing.F) {
	f.Add("session-abc", "host")
	f.Add("<&>\u2028\x01\x7f\"\\", "\xff\xfe")
	f.Fuzz(func(t *testing.T, job, host string) {
		h := Holder{Lock: job, RequestID: host, HostID: host, PID: 1, CreatedAt: time.Unix(1770503400, 5)}
		if b, err := Prodigy.Render(h); err == nil {
			got, err := Prodigy.Parse(b)
			if err != nil || got.Lock != toValid(job) || got.HostID != toValid(host) {
				t.Fatalf("prodigy Parse(Render) = %+v, %v\n%q", got, err, b)
			}
		} else if job != "" {
			t.Fatalf("prodigy Render: %v", err)
		}
		h.Lock = "42"
		b, err := GitClaw.Render(h)
		if err != nil {
			t.Fatal(err)
		}
		got, err := GitClaw.Parse(b)
		want := toValid(host)
		if want == "" {
			want = ForeignRequestID(NameGitClaw, 1, h.CreatedAt)
		}
		if err != nil || got.RequestID != want {
			t.Fatalf("gitclaw Parse(Render) = %+v, %v\n%q", got, err, b)
		}
	})
}

// FuzzParseTarget: never panics; what it accepts round-trips.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"bso:.sprint-running", "beads:/x/.beads/.exclusive-lock", "x:y", ":", "bso:a\x00b", "bso:./a/../b/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tg, err := ParseTarget(s)
		if err != nil {
			return
		}
		again, err := ParseTarget(tg.String())
		if err != nil || again != tg {
			t.Fatalf("ParseTarget(%q) = %+v, then %+v, %v", s, tg, again, err)
		}
	})
}

func toValid(s string) string {
	out := []rune{}
	for _, r := range s {
		out = append(out, r)
	}
	return string(out)
}
