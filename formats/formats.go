// Package formats renders, parses and judges the lock files of the five
// lock systems lockledger replaces as a drop-in:
//
//	tower-fleet  ROOT/locks/NAME.lock         JSON, tower-fleet/lock/v1
//	bso          .sprint-running              YAML, BSO concurrency control
//	beads        .beads/.exclusive-lock       JSON, beads exclusive lock protocol
//	prodigy      resume_locks/<job>.lock      JSON, Prodigy resume locks (Rust, serde)
//	gitclaw      state/locks/<N>.lock         JSON, GitClaw GITCLAW-LOCK.ts
//
// Every format maps a Holder (one lock holding in lockledger's terms) to and
// from its own fields; the mapping is documented on each format's type and
// in README.md. Render writes byte for byte what the seed's own tool writes;
// Parse reads any file of the format and wraps ErrMalformed on failure;
// Judge applies the format's own staleness rule, reconciled with
// lockledger's states (held, stale, dead).
//
// The package does no I/O: the ledger reads and writes the files, and hands
// Judge an Env with this host's id and a process probe.
package formats

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/proc"
	"github.com/lockledger/lockledger/internal/termtext"
)

// Holder is one lock holding in lockledger's terms. Each format maps it to
// and from its own fields (see the format types and README.md).
//
// Formats that carry no heartbeat set HeartbeatAt = CreatedAt on Parse.
// Formats that carry no request id synthesise one on Parse (see
// ForeignRequestID), so a foreign holder always has a non-empty RequestID.
type Holder struct {
	Lock, RequestID, Actor, Intent, IntentVersion, HostID string
	PID                                                   int
	CreatedAt, HeartbeatAt                                time.Time
	TTL                                                   time.Duration
	Metadata                                              map[string]string
}

// Env is what judging a foreign file needs.
type Env struct {
	HostID string                      // this host (compare per format: beads is case-insensitive)
	Probe  func(pid int) proc.Liveness // kill(pid,0): ESRCH -> Gone, nil/EPERM -> Alive; nil means Unknown
	MaxAge time.Duration               // BSO's 24h by default (0 = the format's default); a caller-supplied --max-age
}

func (e Env) probe(pid int) proc.Liveness {
	if e.Probe == nil || pid <= 0 {
		return proc.Unknown
	}
	return e.Probe(pid)
}

// Verdict on a file. State is "held", "stale" or "dead" (lockledger's
// states: dead = provably gone, taken over automatically; stale = needs
// --force; held = active). Reason is one of the Reason* tokens; Detail says
// the same for a person. FailSafe marks a file that is treated as held only
// because it could not be read; Zombie marks BSO's zombie locks.
type Verdict struct {
	State    string
	Reason   string
	FailSafe bool
	Zombie   bool
	Detail   string
}

// Verdict reasons.
const (
	ReasonActive     = "active"      // nothing says the holder is gone (fresh heartbeat / TTL not run out)
	ReasonPIDAlive   = "pid_alive"   // the local pid answers kill(pid,0) (EPERM counts as alive)
	ReasonPIDUnknown = "pid_unknown" // the local pid could not be probed
	ReasonRemoteHost = "remote_host" // the holder is on another host: its pid is never judged
	ReasonPIDDead    = "pid_dead"    // the holder is on this host and kill(pid,0) said ESRCH
	ReasonTTLExpired = "ttl_expired" // the heartbeat (or creation time) is older than the TTL
	ReasonMaxAge     = "max_age"     // older than --max-age (BSO: 24 h by default)
	ReasonCorrupt    = "corrupt"     // the file could not be parsed
	ReasonClockSkew  = "clock_skew"  // the heartbeat (or creation time) lies further in the future than MaxClockSkew
)

// MaxClockSkew is how far ahead of the judging clock a heartbeat or
// creation time may lie and still be believed: clocks of hosts that share
// a lock disagree a little. A time further ahead is no evidence of a live
// holder (a clock set wrong, or a file written by hand), so a format that
// judges by time calls it stale (ReasonClockSkew), and --force takes it.
const MaxClockSkew = 5 * time.Minute

// Skewed reports whether t lies more than MaxClockSkew ahead of now: a
// time that cannot be trusted as fresh.
func Skewed(t, now time.Time) bool { return t.Sub(now) > MaxClockSkew }

// skewVerdict is the verdict on a time (what: "last heartbeat", ...) that
// lies more than MaxClockSkew ahead of now.
func skewVerdict(what string, t, now time.Time) (Verdict, bool) {
	if !Skewed(t, now) {
		return Verdict{}, false
	}
	return Verdict{State: events.StateStale, Reason: ReasonClockSkew,
		Detail: fmt.Sprintf("%s %s in the future (clock skew beyond %s): not trusted as fresh", what, t.Sub(now).Round(time.Second), MaxClockSkew)}, true
}

// EnvOf is the Env of host hostID whose processes probe answers about.
func EnvOf(hostID string, probe proc.Probe, maxAge time.Duration) Env {
	return Env{HostID: hostID, MaxAge: maxAge, Probe: func(pid int) proc.Liveness {
		live, _ := probe.Probe(pid)
		return live
	}}
}

// ErrMalformed is wrapped by every Parse failure.
var ErrMalformed = errors.New("malformed lock file")

// maxFile bounds the size of a lock file Parse accepts (the ledger reads at
// most this much plus one byte).
const maxFile = 64 << 10

// Format is one lock-file format.
type Format interface {
	Name() string
	Render(h Holder) ([]byte, error)   // byte-exact what the seed's own tool writes
	Parse(data []byte) (Holder, error) // any file of this format; malformed -> error wrapping ErrMalformed
	Judge(h Holder, parseErr error, now time.Time, env Env) Verdict
}

// Format names.
const (
	NameTowerFleet = "tower-fleet"
	NameBSO        = "bso"
	NameBeads      = "beads"
	NameProdigy    = "prodigy"
	NameGitClaw    = "gitclaw"
)

// The formats, usable directly.
var (
	TowerFleet Format = towerFleet{}
	BSO        Format = bso{}
	Beads      Format = beads{}
	Prodigy    Format = prodigy{}
	GitClaw    Format = gitclaw{}
)

var all = []Format{TowerFleet, BSO, Beads, Prodigy, GitClaw}

// Names lists the format names, the default (tower-fleet) first.
func Names() []string {
	out := make([]string, len(all))
	for i, f := range all {
		out[i] = f.Name()
	}
	return out
}

// Lookup returns the format called name.
func Lookup(name string) (Format, error) {
	for _, f := range all {
		if f.Name() == name {
			return f, nil
		}
	}
	return nil, events.Invalid("format", name, "must be one of "+strings.Join(Names(), ", "))
}

// CarriesTTL reports whether lock files of format name carry a TTL: their
// own (tower-fleet) or a fixed one (GitClaw's). A holder parsed from a
// format that carries none (bso, beads, prodigy) has TTL 0.
func CarriesTTL(name string) bool {
	return name == NameTowerFleet || name == NameGitClaw
}

// ParseTarget parses a --file value, "FORMAT:PATH". The path is cleaned
// (filepath.Clean) and may be absolute or relative. Errors wrap
// events.ErrInvalid and name the field (--file) and the rule.
func ParseTarget(s string) (events.Target, error) {
	const field = "--file"
	rule := func(r string) error { return events.Invalid(field, s, r) }
	if s == "" {
		return events.Target{}, rule("must be FORMAT:PATH, FORMAT one of " + strings.Join(Names(), ", "))
	}
	if !utf8.ValidString(s) {
		return events.Target{}, events.Invalid(field, strings.ToValidUTF8(s, "\uFFFD"), "must be valid UTF-8")
	}
	for _, r := range s {
		if r == 0 {
			return events.Target{}, rule("must not contain a NUL byte")
		}
		if r < 0x20 || r == 0x7f {
			return events.Target{}, rule("must not contain control characters")
		}
	}
	name, path, ok := strings.Cut(s, ":")
	if !ok {
		return events.Target{}, rule("must be FORMAT:PATH, FORMAT one of " + strings.Join(Names(), ", "))
	}
	if _, err := Lookup(name); err != nil {
		if name == "" {
			return events.Target{}, rule("FORMAT before the colon is empty; must be one of " + strings.Join(Names(), ", "))
		}
		return events.Target{}, rule(fmt.Sprintf("unknown format %q; must be one of %s", name, strings.Join(Names(), ", ")))
	}
	if path == "" {
		return events.Target{}, rule("PATH after the colon is empty")
	}
	if strings.HasSuffix(path, "/") {
		return events.Target{}, rule("PATH must name a file, not a directory (it ends in /)")
	}
	clean := filepath.Clean(path)
	if clean == "." || clean == "/" || clean == ".." || strings.HasSuffix(clean, "/..") {
		return events.Target{}, rule("PATH must name a file, not a directory")
	}
	return events.Target{Format: name, Path: clean}, nil
}

// DefaultPath is the conventional path of a lock file of the format,
// relative to the directory the seed's tool uses (informational):
// tower-fleet "locks/<lock>.lock" (under the lockledger root; the spec's
// /root/tower-fleet/logs/locks), bso ".sprint-running" (project root), beads
// ".beads/.exclusive-lock" (repository), prodigy "resume_locks/<lock>.lock"
// (under ~/.prodigy), gitclaw "state/locks/<lock>.lock" (under .GITCLAW).
// An unknown format gives "".
func DefaultPath(format, lock string) string {
	return strings.Replace(defaultPaths[format], "*", lock, 1)
}

var defaultPaths = map[string]string{NameTowerFleet: "locks/*.lock", NameBSO: ".sprint-running",
	NameBeads: ".beads/.exclusive-lock", NameProdigy: "resume_locks/*.lock", NameGitClaw: "state/locks/*.lock"}

// ForeignRequestID is the request id Parse gives a holder whose format
// carries none (beads, prodigy; bso and gitclaw when the field is missing):
// "<format>:<pid>:<unix seconds of CreatedAt>", which satisfies lockledger's
// request-id rule and is stable for one file.
func ForeignRequestID(format string, pid int, created time.Time) string {
	return fmt.Sprintf("%s:%d:%d", format, pid, created.Unix())
}

// Recordable is the holder h parsed from a file of format at lock's path,
// completed so that ToRecord gives a valid v1 record: a request id that
// breaks lockledger's rule is replaced by ForeignRequestID, an empty actor
// is the format's name, an empty host "unknown", a missing creation time
// the Unix epoch, a missing heartbeat the creation time, a negative pid 0,
// and the TTL at least one second.
func Recordable(format, lock string, h Holder) Holder {
	if events.ValidateRequestID(h.RequestID) != nil {
		h.RequestID = ForeignRequestID(format, h.PID, h.CreatedAt)
	}
	h.Actor, h.HostID = cmp.Or(h.Actor, format), cmp.Or(h.HostID, "unknown")
	if h.CreatedAt.IsZero() {
		h.CreatedAt = time.Unix(0, 0)
	}
	if h.HeartbeatAt.IsZero() {
		h.HeartbeatAt = h.CreatedAt
	}
	h.Lock, h.PID, h.TTL = lock, max(h.PID, 0), max(h.TTL, time.Second)
	return h
}

// TakesOverUnreadable reports whether format f's own tool takes over the
// file at path that fails to parse with parseErr (BSO's zombie, GitClaw's
// corrupt lock): path is where that tool keeps its locks (OwnLockPath),
// and the format's verdict on the file neither fails safe nor holds. Any
// other unreadable file is no lock of that tool, only someone's data.
func TakesOverUnreadable(f Format, path string, parseErr error) bool {
	v := f.Judge(Holder{}, parseErr, time.Time{}, Env{})
	return OwnLockPath(f.Name(), path) && !v.FailSafe && v.State != events.StateHeld
}

// OwnLockPath reports whether path is named as format's own tool names
// its lock files, which that tool alone writes: BSO's .sprint-running,
// GitClaw's locks/<issue number>.lock. The other formats' paths are not
// fixed by their tools ("").
func OwnLockPath(format, path string) bool {
	base, dir := filepath.Base(path), filepath.Base(filepath.Dir(path))
	switch format {
	case NameBSO:
		return base == ".sprint-running"
	case NameGitClaw:
		n, ok := strings.CutSuffix(base, ".lock")
		return ok && dir == "locks" && n != "" && strings.Trim(n, "0123456789") == ""
	}
	return false
}

// malformed wraps ErrMalformed with the format's name and a detail.
func malformed(format, detail string, args ...any) error {
	return fmt.Errorf("%s: %w: %s", format, ErrMalformed, termtext.Sprintf(detail, args...))
}

// checkSize refuses a file larger than any lock file.
func checkSize(format string, data []byte) error {
	if len(data) > maxFile {
		return malformed(format, "larger than %d bytes", maxFile)
	}
	return nil
}

// renderTime checks that t can be written as a four-digit-year timestamp.
func renderTime(format, field string, t time.Time) error {
	if t.IsZero() {
		return fmt.Errorf("%s: %s is required", format, field)
	}
	if y := t.UTC().Year(); y < 0 || y > 9999 {
		return fmt.Errorf("%s: %s year %d is outside 0000-9999", format, field, y)
	}
	return nil
}

// --- judging helpers -------------------------------------------------------

func held(reason, detail string) Verdict {
	return Verdict{State: events.StateHeld, Reason: reason, Detail: detail}
}

// failSafe is the verdict on an unreadable file that the format treats as held.
func failSafe(format string, err error, what string) Verdict {
	return Verdict{State: events.StateHeld, Reason: ReasonCorrupt, FailSafe: true,
		Detail: termtext.Sprintf("%v; %s fails safe: treated as held (%s)", err, format, what)}
}

// maxAgeVerdict applies a caller-supplied --max-age to any format. A
// creation time too far in the future has no age to compare: stale.
func maxAgeVerdict(h Holder, now time.Time, maxAge time.Duration) (Verdict, bool) {
	if maxAge <= 0 || h.CreatedAt.IsZero() {
		return Verdict{}, false
	}
	if v, ok := skewVerdict("created", h.CreatedAt, now); ok {
		return v, true
	}
	if age := now.Sub(h.CreatedAt); age > maxAge {
		return Verdict{State: events.StateStale, Reason: ReasonMaxAge,
			Detail: fmt.Sprintf("created %s ago, older than --max-age %s", age.Round(time.Second), maxAge)}, true
	}
	return Verdict{}, false
}

// hostPIDVerdict judges a holder by its pid where it is on this host
// (local), as held (remote the detail) where it is on another, and by
// --max-age unless its pid is gone.
func hostPIDVerdict(h Holder, now time.Time, env Env, local bool, remote string) Verdict {
	v := held(ReasonRemoteHost, remote)
	if local {
		var dead bool
		if v, dead = pidVerdict(h.PID, env); dead {
			return v
		}
	}
	if mv, ok := maxAgeVerdict(h, now, env.MaxAge); ok {
		return mv
	}
	return v
}

// pidVerdict judges a holder known to be on this host by its pid: dead
// when ESRCH, otherwise held with the probe's answer as the reason.
func pidVerdict(pid int, env Env) (Verdict, bool) {
	switch env.probe(pid) {
	case proc.Gone:
		return Verdict{State: events.StateDead, Reason: ReasonPIDDead,
			Detail: fmt.Sprintf("pid %d on this host is gone (ESRCH)", pid)}, true
	case proc.Alive:
		return held(ReasonPIDAlive, fmt.Sprintf("pid %d on this host is alive", pid)), false
	}
	return held(ReasonPIDUnknown, fmt.Sprintf("pid %d on this host could not be probed", pid)), false
}
