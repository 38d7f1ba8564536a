package formats

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/termtext"
)

// gitclaw is GitClaw's per-issue session lock `state/locks/<N>.lock`
// (GITCLAW-LOCK.ts), JSON as JSON.stringify(lock, null, 2) + "\n" writes
// the LockInfo object: fields in insertion order, two-space indent,
// trailing newline; acquiredAt is new Date().toISOString() (UTC,
// milliseconds, "Z").
//
//	issueNumber  Metadata["issue_number"] if set, else Lock; must be a whole
//	             number (Parse: Lock = its decimal text, "" if absent)
//	runId        RequestID (Parse: ForeignRequestID when absent)
//	acquiredAt   CreatedAt, truncated to milliseconds (Parse: also HeartbeatAt)
//	pid          PID (process.pid; informational, GitClaw never probes it)
//
// Actor, Intent, IntentVersion and HostID are not carried. The TTL is not
// in the file: LOCK_TTL_MS, 10 minutes (GitClawTTL), which Parse sets.
//
// Judge (acquireLock / cleanStaleLocks): a lock is valid while
// Date.now() - acquiredAt < LOCK_TTL_MS, so it is stale once its age
// reaches the TTL (>=, as the code compares); stale needs --force in
// lockledger. An acquiredAt more than MaxClockSkew ahead is stale too
// (GitClaw would honour it until its TTL after that date). The pid is not judged (GitClaw runs on ephemeral runners and
// never checks it). GitClaw removes a corrupt lock file exactly as it
// removes an expired one (cleanStaleLocks' catch), and its acquire takes
// over a lock whose acquiredAt is not a date, so a malformed file is stale
// with Reason "corrupt": never honoured as held, but not "dead" either,
// since GitClaw writes non-atomically and a half-written file proves nothing.
//
// Parse is stricter than GitClaw's JSON.parse: issueNumber (a whole
// number), runId and acquiredAt are required, and an object with a member
// LockInfo does not have is malformed, so that no other JSON file passes
// for a lock.
type gitclaw struct{}

func (gitclaw) Name() string { return NameGitClaw }

// GitClawTTL is GitClaw's LOCK_TTL_MS.
const GitClawTTL = 10 * time.Minute

// jsISOTime is Date.prototype.toISOString for years 0-9999.
const jsISOTime = "2006-01-02T15:04:05.000Z"

// maxSafeInteger is JavaScript's Number.MAX_SAFE_INTEGER.
const maxSafeInteger = 1<<53 - 1

func (f gitclaw) Render(h Holder) ([]byte, error) {
	if err := renderTime(f.Name(), "acquiredAt", h.CreatedAt); err != nil {
		return nil, err
	}
	issue := h.Lock
	if v, ok := h.Metadata["issue_number"]; ok {
		issue = v
	}
	n, err := strconv.ParseInt(issue, 10, 64)
	if err != nil || n < 0 || n > maxSafeInteger || strconv.FormatInt(n, 10) != issue {
		return nil, fmt.Errorf("%s: issueNumber %q must be a whole number (name the lock after the issue, or set metadata issue_number)", f.Name(), issue)
	}
	out := prettyObject(
		jint("issueNumber", n),
		jstr("runId", h.RequestID),
		jstr("acquiredAt", h.CreatedAt.UTC().Format(jsISOTime)),
		jint("pid", int64(h.PID)),
	)
	return append(out, '\n'), nil
}

func (f gitclaw) Parse(data []byte) (Holder, error) {
	name := f.Name()
	obj, err := jsonObject(name, data, false)
	if err != nil {
		return Holder{}, err
	}
	for key := range obj {
		if !gitclawKeys[key] {
			return Holder{}, malformed(name, "unknown member %q: GitClaw's LockInfo has only issueNumber, runId, acquiredAt and pid", key)
		}
	}
	var h Holder
	// issueNumber: GitClaw writes the issue's number, a whole JSON number.
	var issue json.Number
	if raw, ok := obj["issueNumber"]; !ok || strings.HasPrefix(string(raw), `"`) || json.Unmarshal(raw, &issue) != nil {
		return Holder{}, malformed(name, "issueNumber is required and must be a number")
	}
	n, err := integer(name, "issueNumber", issue, 0, maxSafeInteger)
	if err != nil {
		return Holder{}, err
	}
	h.Lock = strconv.FormatInt(n, 10)
	runID, ok := jsonScalarText(obj["runId"])
	if !ok {
		return Holder{}, malformed(name, "runId is required and must be a string")
	}
	// acquiredAt: new Date(x) takes an ISO string or a millisecond count.
	raw, ok := obj["acquiredAt"]
	if !ok || string(raw) == "null" {
		return Holder{}, malformed(name, "acquiredAt is required")
	}
	var s string
	var num json.Number
	switch {
	case json.Unmarshal(raw, &s) == nil:
		if h.CreatedAt, err = events.ParseTime(s); err != nil {
			return Holder{}, malformed(name, "acquiredAt %q is not a date: %v", s, err)
		}
	case json.Unmarshal(raw, &num) == nil:
		ms, err := integer(name, "acquiredAt", num, -8.64e15, 8.64e15)
		if err != nil {
			return Holder{}, err
		}
		h.CreatedAt = time.UnixMilli(ms).UTC()
	default:
		return Holder{}, malformed(name, "acquiredAt is neither a date string nor a number")
	}
	h.HeartbeatAt = h.CreatedAt
	h.TTL = GitClawTTL
	if text, ok := jsonScalarText(obj["pid"]); ok {
		if n, err := strconv.ParseInt(text, 10, 32); err == nil && n > 0 {
			h.PID = int(n)
		}
	}
	h.RequestID = cmp.Or(runID, ForeignRequestID(name, h.PID, h.CreatedAt))
	return h, nil
}

// gitclawKeys are LockInfo's members.
var gitclawKeys = map[string]bool{"issueNumber": true, "runId": true, "acquiredAt": true, "pid": true}

// jsonScalarText is the value of a JSON string, or the text of a JSON number.
func jsonScalarText(raw json.RawMessage) (string, bool) {
	if raw == nil {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return strings.TrimSpace(n.String()), true
	}
	return "", false
}

func (f gitclaw) Judge(h Holder, parseErr error, now time.Time, env Env) Verdict {
	if parseErr != nil {
		return Verdict{State: events.StateStale, Reason: ReasonCorrupt,
			Detail: termtext.Sprintf("%v; GitClaw removes a corrupt lock as it does an expired one: stale, take it over with --force", parseErr)}
	}
	ttl := h.TTL
	if ttl <= 0 {
		ttl = GitClawTTL
	}
	if v, ok := skewVerdict("acquired", h.CreatedAt, now); ok {
		return v
	}
	if age := now.Sub(h.CreatedAt); age >= ttl {
		return Verdict{State: events.StateStale, Reason: ReasonTTLExpired,
			Detail: termtext.Sprintf("run %s acquired %s ago, not less than the %s TTL", h.RequestID, age.Round(time.Second), ttl)}
	}
	if v, ok := maxAgeVerdict(h, now, env.MaxAge); ok {
		return v
	}
	return held(ReasonActive, termtext.Sprintf("run %s acquired the lock within the %s TTL", h.RequestID, ttl))
}
