package formats

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/lockledger/lockledger/internal/termtext"
)

// beads is beads' `.beads/.exclusive-lock` (EXCLUSIVE_LOCK.md), JSON as
// beads' own Go code writes it: json.MarshalIndent(types.ExclusiveLock,
// "", "  ") in struct order, Go's HTML-safe string escaping, no trailing
// newline (os.WriteFile of MarshalIndent's output); started_at is a
// time.Time, written in UTC whole seconds so that it reads exactly as the
// document's example and its shell recipe (`date -u +%Y-%m-%dT%H:%M:%SZ`).
//
//	holder      Actor ("name of the tool holding the lock")
//	pid         PID
//	hostname    HostID
//	started_at  CreatedAt (Parse: also HeartbeatAt; beads has no heartbeat)
//	version     IntentVersion ("version of the lock holder"; always written, "" when unset)
//
// Parse reads the file as beads does (json.Unmarshal into ExclusiveLock,
// unknown fields ignored, then Validate: holder and hostname non-empty,
// pid > 0, started_at set) and gives RequestID = ForeignRequestID; Lock,
// Intent and TTL are not carried (beads has no TTL).
//
// Judge ("Stale Lock Detection"): dead only when hostname is this host
// (case-insensitive) and the pid is gone (ESRCH); EPERM is alive; a lock
// from another host is always valid; a malformed file is held, fail safe
// ("the daemon fails safe and skips the database"). A caller-supplied
// --max-age (Env.MaxAge) makes an older lock stale, on any host.
type beads struct{}

func (beads) Name() string { return NameBeads }

// exclusiveLock is beads' types.ExclusiveLock, field for field.
type exclusiveLock struct {
	Holder    string    `json:"holder"`
	PID       int       `json:"pid"`
	Hostname  string    `json:"hostname"`
	StartedAt time.Time `json:"started_at"`
	Version   string    `json:"version"`
}

// validate is ExclusiveLock.Validate.
func (e *exclusiveLock) validate() error {
	switch {
	case e.Holder == "":
		return fmt.Errorf("holder is required")
	case e.PID <= 0:
		return fmt.Errorf("pid must be positive (got %d)", e.PID)
	case e.Hostname == "":
		return fmt.Errorf("hostname is required")
	case e.StartedAt.IsZero():
		return fmt.Errorf("started_at is required")
	}
	return nil
}

func (f beads) Render(h Holder) ([]byte, error) {
	if err := renderTime(f.Name(), "started_at", h.CreatedAt); err != nil {
		return nil, err
	}
	l := exclusiveLock{Holder: h.Actor, PID: h.PID, Hostname: h.HostID,
		StartedAt: h.CreatedAt.UTC().Truncate(time.Second), Version: h.IntentVersion}
	if err := l.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	return json.MarshalIndent(l, "", "  ")
}

func (f beads) Parse(data []byte) (Holder, error) {
	if err := checkSize(f.Name(), data); err != nil {
		return Holder{}, err
	}
	var l exclusiveLock
	if err := json.Unmarshal(data, &l); err != nil {
		return Holder{}, malformed(f.Name(), "%v", err)
	}
	if err := l.validate(); err != nil {
		return Holder{}, malformed(f.Name(), "%v", err)
	}
	t := l.StartedAt.UTC()
	return Holder{RequestID: ForeignRequestID(f.Name(), l.PID, t), Actor: l.Holder, IntentVersion: l.Version,
		HostID: l.Hostname, PID: l.PID, CreatedAt: t, HeartbeatAt: t}, nil
}

func (f beads) Judge(h Holder, parseErr error, now time.Time, env Env) Verdict {
	if parseErr != nil {
		return failSafe(f.Name(), parseErr, "beads skips a database whose lock is malformed; fix or remove the file by hand")
	}
	return hostPIDVerdict(h, now, env, env.HostID != "" && strings.EqualFold(h.HostID, env.HostID),
		termtext.Sprintf("held by %s on %s: a remote lock is always valid", h.Actor, h.HostID))
}
