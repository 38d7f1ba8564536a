package formats

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
	"time"

	"go.yaml.in/yaml/v4"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/proc"
	"github.com/lockledger/lockledger/internal/termtext"
)

// bso is BSO's `.sprint-running`, YAML written from the template of BSO's
// concurrency control:
//
//	pid: 12345
//	session_id: "sprint-2026-02-07-001"
//	started_at: "2026-02-07T22:30:00Z"
//	epic_spec: "epic5"
//	lock_version: 1
//
// in that order, strings double-quoted (YAML escapes where needed), time
// RFC 3339 UTC seconds ("ISO 8601 UTC"), trailing newline.
//
//	pid           PID (must be >= 1 on Parse)
//	session_id    RequestID (Parse: ForeignRequestID when missing or empty)
//	started_at    CreatedAt (Parse: also HeartbeatAt; BSO has no heartbeat)
//	epic_spec     Metadata["epic_spec"] if set, else Intent (Parse: Intent)
//	lock_version  1 (constant; read but not kept)
//
// Lock, Actor, IntentVersion, HostID and TTL are not carried: the file
// names neither lock nor host (BSO probes the pid locally, so a parsed
// holder has HostID "" meaning "this host"), and BSO has no TTL, only the
// 24-hour zombie threshold (Env.MaxAge).
//
// Judge (Step 2, "Zombie Detection"): is_zombie = pid dead OR age > 24 h
// (Env.MaxAge overrides the 24 h). Mapped to lockledger's states: a dead
// pid is "dead" (provably gone); a live pid past the age limit is "stale"
// (BSO: suspected zombie, overwritten only with force or confirmation); a
// pid that cannot be probed is "stale" too (BSO assumes it gone, but it is
// not proven); a started_at more than MaxClockSkew ahead has no age BSO
// could trust, and is "stale" (a suspected zombie); a corrupt file (bad YAML, or pid/started_at missing or
// invalid) is a zombie, "dead" with Reason "corrupt" (Step 1.4, Case D).
//
// Parse is stricter than BSO's reader: pid and started_at are required,
// and a mapping with a key outside the template (or a lock_version that
// is not a positive integer) is malformed, so that no other YAML file
// passes for a lock.
type bso struct{}

func (bso) Name() string { return NameBSO }

// BSOZombieThreshold is BSO's ZOMBIE_THRESHOLD_HOURS.
const BSOZombieThreshold = 24 * time.Hour

// BSOLockVersion is BSO's LOCK_VERSION.
const BSOLockVersion = 1

func (f bso) Render(h Holder) ([]byte, error) {
	if err := renderTime(f.Name(), "started_at", h.CreatedAt); err != nil {
		return nil, err
	}
	if h.PID < 1 {
		return nil, fmt.Errorf("%s: pid must be a positive integer (got %d)", f.Name(), h.PID)
	}
	epic := h.Intent
	if v, ok := h.Metadata["epic_spec"]; ok {
		epic = v
	}
	return fmt.Appendf(nil, "pid: %d\nsession_id: %s\nstarted_at: %s\nepic_spec: %s\nlock_version: %d\n", h.PID,
		appendYAMLString(nil, h.RequestID), appendYAMLString(nil, events.FormatLockTime(h.CreatedAt)),
		appendYAMLString(nil, epic), BSOLockVersion), nil
}

// appendYAMLString writes s as a YAML double-quoted scalar. Only '"',
// '\\' and characters outside YAML's printable set (or that would break
// the line) are escaped, so ordinary values read exactly as the template
// shows them.
func appendYAMLString(b []byte, s string) []byte {
	return appendQuoted(b, s, yamlEscapes, func(r rune) string {
		switch {
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			return fmt.Sprintf(`\x%02X`, r)
		case r == 0x2028 || r == 0x2029 || r == 0xfeff || r == 0xfffe || r == 0xffff:
			return fmt.Sprintf(`\u%04X`, r)
		}
		return ""
	})
}

var yamlEscapes = map[rune]byte{'"': '"', '\\': '\\', '\t': 't', '\n': 'n', '\r': 'r', 0: '0'}

// bsoFile is what Parse reads, with started_at as written.
type bsoFile struct {
	pid       int
	sessionID string
	startedAt string
	started   time.Time
	epicSpec  string
}

func (bso) Parse(data []byte) (Holder, error) {
	f, err := parseBSO(data)
	if err != nil {
		return Holder{}, err
	}
	return Holder{RequestID: cmp.Or(f.sessionID, ForeignRequestID(NameBSO, f.pid, f.started)), Intent: f.epicSpec,
		PID: f.pid, CreatedAt: f.started, HeartbeatAt: f.started}, nil
}

func parseBSO(data []byte) (file bsoFile, err error) {
	const name = NameBSO
	if err := checkSize(name, data); err != nil {
		return bsoFile{}, err
	}
	defer func() {
		if r := recover(); r != nil { // the YAML library must never take the ledger down
			file, err = bsoFile{}, malformed(name, "YAML parser failed: %v", r)
		}
	}()
	var doc yaml.Node
	if err := yaml.Load(data, &doc); err != nil {
		return bsoFile{}, malformed(name, "invalid YAML: %v", err)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		if root.Kind == 0 {
			return bsoFile{}, malformed(name, "empty file")
		}
		return bsoFile{}, malformed(name, "not a YAML mapping")
	}
	fields := map[string]*yaml.Node{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := deref(root.Content[i]), deref(root.Content[i+1])
		if k == nil || k.Kind != yaml.ScalarNode {
			return bsoFile{}, malformed(name, "a key that is not a scalar: BSO's keys are %s", bsoKeysText)
		}
		if !bsoKeys[k.Value] {
			return bsoFile{}, malformed(name, "unknown key %q: BSO's keys are %s", k.Value, bsoKeysText)
		}
		if _, dup := fields[k.Value]; dup {
			return bsoFile{}, malformed(name, "duplicate key %q", k.Value)
		}
		fields[k.Value] = v
	}
	scalar := func(key string) (string, bool, error) {
		n := fields[key]
		if n == nil || n.ShortTag() == "!!null" {
			return "", false, nil
		}
		if n.Kind != yaml.ScalarNode {
			return "", true, malformed(name, "%s is not a scalar", key)
		}
		return n.Value, true, nil
	}
	pidText, ok, err := scalar("pid")
	if err != nil {
		return bsoFile{}, err
	}
	if !ok {
		return bsoFile{}, malformed(name, "pid is required")
	}
	switch fields["pid"].ShortTag() {
	case "!!int", "!!str":
	default:
		return bsoFile{}, malformed(name, "pid %q is not an integer", pidText)
	}
	pid, perr := strconv.ParseInt(pidText, 10, 32)
	if perr != nil || pid < 1 {
		return bsoFile{}, malformed(name, "pid %q is not a positive integer", pidText)
	}
	file.pid = int(pid)
	started, ok, err := scalar("started_at")
	if err != nil {
		return bsoFile{}, err
	}
	if !ok || started == "" {
		return bsoFile{}, malformed(name, "started_at is required")
	}
	t, terr := events.ParseTime(started)
	if terr != nil {
		return bsoFile{}, malformed(name, "started_at %q is not an ISO 8601 UTC time: %v", started, terr)
	}
	file.startedAt, file.started = started, t
	if file.sessionID, _, err = scalar("session_id"); err != nil {
		return bsoFile{}, err
	}
	if file.epicSpec, _, err = scalar("epic_spec"); err != nil {
		return bsoFile{}, err
	}
	if v, ok, err := scalar("lock_version"); err != nil {
		return bsoFile{}, err
	} else if n, perr := strconv.ParseInt(v, 10, 32); ok && (perr != nil || n < 1) {
		return bsoFile{}, malformed(name, "lock_version %q is not a positive integer", v)
	}
	return file, nil
}

// bsoKeys are the keys of BSO's template. A mapping with any other key is
// not BSO's lock file, however it parses: the ledger replaces a file at a
// target path only when it is a lock of the target's format, so a YAML
// config that happens to carry a pid must not pass for one.
var bsoKeys = map[string]bool{"pid": true, "session_id": true, "started_at": true, "epic_spec": true, "lock_version": true}

const bsoKeysText = "pid, session_id, started_at, epic_spec and lock_version"

// deref follows aliases to the node they name.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 8; i++ {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.AliasNode {
		return nil
	}
	return n
}

func (f bso) Judge(h Holder, parseErr error, now time.Time, env Env) Verdict {
	if parseErr != nil {
		return Verdict{State: events.StateDead, Reason: ReasonCorrupt, Zombie: true,
			Detail: termtext.Sprintf("Lock file exists but has invalid format (%v); BSO treats it as a zombie", parseErr)}
	}
	maxAge := env.MaxAge
	if maxAge <= 0 {
		maxAge = BSOZombieThreshold
	}
	local := h.HostID == "" || h.HostID == env.HostID
	v := held(ReasonRemoteHost, termtext.Sprintf("holder on host %s: pid not judged", h.HostID))
	if local {
		var dead bool
		if v, dead = pidVerdict(h.PID, env); dead {
			v.Zombie = true
			return v
		}
		if v.Reason == ReasonPIDUnknown {
			v.State, v.Zombie = events.StateStale, true
			v.Detail += "; BSO assumes it gone (zombie), lockledger needs --force"
			return v
		}
	}
	if sv, ok := skewVerdict("started", h.CreatedAt, now); ok {
		sv.Zombie = true
		return sv
	}
	if age := now.Sub(h.CreatedAt); age > maxAge {
		return Verdict{State: events.StateStale, Reason: ReasonMaxAge, Zombie: true,
			Detail: fmt.Sprintf("started %.2fh ago, older than %s: suspected zombie", age.Hours(), maxAge)}
	}
	return v
}

// BSO's check-mode return object (Output Schema, "Return Value").
type BSOLockInfo struct {
	Exists    bool    `json:"exists"`
	PID       int     `json:"pid,omitempty"`
	SessionID string  `json:"session_id,omitempty"`
	StartedAt string  `json:"started_at,omitempty"`
	EpicSpec  string  `json:"epic_spec,omitempty"`
	AgeHours  float64 `json:"age_hours"`
	PIDAlive  bool    `json:"pid_alive"`
	IsZombie  bool    `json:"is_zombie"`
}

// BSOStatus is BSO's return object. Status in check mode is "clean",
// "blocked" or "zombie-detected"; Mode is "check". Errors is always a
// list (the document shows `errors: []`).
type BSOStatus struct {
	Status   string      `json:"status"`
	Mode     string      `json:"mode"`
	LockInfo BSOLockInfo `json:"lock_info"`
	Message  string      `json:"message,omitempty"`
	Errors   []string    `json:"errors"`
}

// BSO statuses and modes (Status Value Mapping).
const (
	BSOStatusAcquired       = "acquired"
	BSOStatusReleased       = "released"
	BSOStatusBlocked        = "blocked"
	BSOStatusZombieDetected = "zombie-detected"
	BSOStatusClean          = "clean"
	BSOStatusFailure        = "failure"
	BSOModeCheck            = "check"
)

// BSOCheck is BSO's check mode (Steps 1-2) on the content of
// .sprint-running (exists false: no file). Zombie when the pid is not
// alive (a probe that cannot tell counts as not alive, as BSO's "PID check
// failed: assume it does not exist") or the lock is older than Env.MaxAge
// (24 h by default), or started more than MaxClockSkew in the future, or
// when the YAML is corrupt.
func BSOCheck(data []byte, exists bool, now time.Time, env Env) BSOStatus {
	st := BSOStatus{Mode: BSOModeCheck, Errors: []string{}}
	if !exists {
		st.Status = BSOStatusClean
		st.Message = "No lock file: no sprint is running"
		return st
	}
	file, err := parseBSO(data)
	if err != nil {
		st.Status = BSOStatusZombieDetected
		st.LockInfo = BSOLockInfo{Exists: true, IsZombie: true}
		st.Message = fmt.Sprintf("Lock file exists but has invalid format (%v)", err)
		return st
	}
	maxAge := env.MaxAge
	if maxAge <= 0 {
		maxAge = BSOZombieThreshold
	}
	age := now.Sub(file.started)
	alive := env.probe(file.pid) == proc.Alive
	info := BSOLockInfo{Exists: true, PID: file.pid, SessionID: file.sessionID, StartedAt: file.startedAt,
		EpicSpec: file.epicSpec, AgeHours: math.Round(age.Hours()*100) / 100, PIDAlive: alive}
	skewed := Skewed(file.started, now)
	info.IsZombie = !alive || age > maxAge || skewed
	st.LockInfo = info
	if skewed {
		st.Status = BSOStatusZombieDetected
		st.Message = fmt.Sprintf("Zombie lock detected (PID: %d, session: %s, started: %s, %s in the future: clock skew)",
			file.pid, file.sessionID, file.startedAt, (-age).Round(time.Second))
		return st
	}
	if info.IsZombie {
		st.Status = BSOStatusZombieDetected
		state := "dead"
		if alive {
			state = "alive"
		}
		st.Message = fmt.Sprintf("Zombie lock detected (PID: %d (%s), session: %s, started: %s (%.2fh ago), epic: %s)",
			file.pid, state, file.sessionID, file.startedAt, info.AgeHours, file.epicSpec)
		return st
	}
	st.Status = BSOStatusBlocked
	st.Message = fmt.Sprintf("Sprint already running (PID: %d, session: %s, started: %s)",
		file.pid, file.sessionID, file.startedAt)
	return st
}
