package formats

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/termtext"
)

// prodigy is Prodigy's resume lock `resume_locks/<job_id>.lock`,
// JSON as serde_json::to_string_pretty(&ResumeLockData) writes it: fields in
// struct order, two-space indent, no trailing newline, strings escaped the
// serde way (only '"', '\\' and control characters); acquired_at is a
// chrono DateTime<Utc>, serialised RFC 3339 with "Z" and the fraction
// chrono's SecondsFormat::AutoSi gives (none, 3, 6 or 9 digits).
//
//	job_id      Metadata["job_id"] if set, else Lock (Parse: Lock)
//	process_id  PID (u32)
//	hostname    HostID
//	acquired_at CreatedAt (Parse: also HeartbeatAt; Prodigy has no heartbeat)
//
// Parse reads the file as serde would (all four fields required, unknown
// fields ignored, a repeated field an error) and gives RequestID =
// ForeignRequestID; Actor, Intent, IntentVersion and TTL are not carried.
//
// Judge (check_and_cleanup_stale_lock): stale = the process is not running,
// which lockledger reports as "dead" (Prodigy removes such a lock itself).
// Two points follow lockledger's rules rather than Prodigy's code: the pid is judged
// only when hostname is this host (exact compare; another host's lock is
// held), and EPERM counts as alive (Prodigy's `kill -0` would call it not
// running). A file Prodigy cannot parse makes its acquire fail ("Failed to
// check lock status"), so a malformed file is held, fail safe.
type prodigy struct{}

func (prodigy) Name() string { return NameProdigy }

// chronoTime formats t as chrono's serde serialisation of DateTime<Utc>.
func chronoTime(t time.Time) string {
	t = t.UTC()
	s := t.Format("2006-01-02T15:04:05")
	switch ns := t.Nanosecond(); {
	case ns == 0:
	case ns%1_000_000 == 0:
		s += fmt.Sprintf(".%03d", ns/1_000_000)
	case ns%1_000 == 0:
		s += fmt.Sprintf(".%06d", ns/1_000)
	default:
		s += fmt.Sprintf(".%09d", ns)
	}
	return s + "Z"
}

// parseChrono parses what chrono's DateTime<Utc> deserialiser accepts:
// RFC 3339, with a space allowed between date and time.
func parseChrono(s string) (time.Time, error) {
	t, err := events.ParseTime(s)
	if err != nil && len(s) > 10 && s[10] == ' ' {
		if t2, err2 := events.ParseTime(s[:10] + "T" + s[11:]); err2 == nil {
			return t2, nil
		}
	}
	return t, err
}

func (f prodigy) Render(h Holder) ([]byte, error) {
	if err := renderTime(f.Name(), "acquired_at", h.CreatedAt); err != nil {
		return nil, err
	}
	if h.PID < 0 || int64(h.PID) > math.MaxUint32 {
		return nil, fmt.Errorf("%s: process_id %d is not a u32", f.Name(), h.PID)
	}
	job := h.Lock
	if v, ok := h.Metadata["job_id"]; ok {
		job = v
	}
	if job == "" {
		return nil, fmt.Errorf("%s: job_id is required (the lock name, or metadata job_id)", f.Name())
	}
	return prettyObject(
		jstr("job_id", job),
		jint("process_id", int64(h.PID)),
		jstr("hostname", h.HostID),
		jstr("acquired_at", chronoTime(h.CreatedAt)),
	), nil
}

func (f prodigy) Parse(data []byte) (Holder, error) {
	name := f.Name()
	obj, err := jsonObject(name, data, true)
	if err != nil {
		return Holder{}, err
	}
	var job, host, acquired string
	var pid json.Number
	for _, m := range []struct {
		key string
		v   any
	}{{"job_id", &job}, {"process_id", &pid}, {"hostname", &host}, {"acquired_at", &acquired}} {
		if err := requiredStrict(name, obj, m.key, m.v); err != nil {
			return Holder{}, err
		}
	}
	p, err := integer(name, "process_id", pid, 0, math.MaxUint32)
	if err != nil {
		return Holder{}, err
	}
	t, err := parseChrono(acquired)
	if err != nil {
		return Holder{}, malformed(name, "acquired_at %q: %v", acquired, err)
	}
	return Holder{Lock: job, RequestID: ForeignRequestID(name, int(p), t), HostID: host, PID: int(p),
		CreatedAt: t, HeartbeatAt: t}, nil
}

// requiredStrict is required with serde's typing: a string field takes
// only a JSON string, a number field only a JSON number, and null is a
// type error rather than "missing".
func requiredStrict(format string, obj map[string]json.RawMessage, key string, v any) error {
	raw, ok := obj[key]
	if !ok {
		return malformed(format, "missing field `%s`", key)
	}
	text := strings.TrimSpace(string(raw))
	switch v.(type) {
	case *string:
		if !strings.HasPrefix(text, `"`) {
			return malformed(format, "%s: invalid type, expected a string", key)
		}
	case *json.Number:
		if text == "" || !(text[0] == '-' || (text[0] >= '0' && text[0] <= '9')) {
			return malformed(format, "%s: invalid type, expected an integer", key)
		}
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return malformed(format, "%s: %v", key, err)
	}
	return nil
}

func (f prodigy) Judge(h Holder, parseErr error, now time.Time, env Env) Verdict {
	if parseErr != nil {
		return failSafe(f.Name(), parseErr, "Prodigy cannot check an unreadable lock and refuses to resume")
	}
	return hostPIDVerdict(h, now, env, env.HostID != "" && h.HostID == env.HostID,
		termtext.Sprintf("PID %d on %s: another host's pid is never judged", h.PID, h.HostID))
}
