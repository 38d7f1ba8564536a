package events

import (
	"strconv"

	"github.com/lockledger/lockledger/internal/termtext"
)

// The writes a fence refuses (fence_rejected's action): which fence
// refused it.
const (
	FenceFileWrite     = "file_write"     // a file's sidecar token (package fence's WriteFile, lockledger fence write)
	FencePostgresWrite = "postgres_write" // the lockledger_fences trigger, in the database
	FenceCheck         = "check"          // a Go service's own check (package fence's Fence)
)

// FenceRejectedPayload is fence_rejected's payload: a write to Resource
// carrying FencingToken, refused because the resource had already seen
// CurrentToken, a later holding's. Who tried is the envelope (its host,
// pid and request); the lock is its lock_name. The JSON names are ones
// other event types already use (destination, last_seq): every event
// type draws on one table of field names.
type FenceRejectedPayload struct {
	Action       string `json:"action"`
	Resource     string `json:"destination"`
	FencingToken int64  `json:"fencing_token"`
	CurrentToken int64  `json:"last_seq"`
}

// maxFenceResource is the longest resource a fence_rejected event names
// (its schema's maxLength).
const maxFenceResource = 4096

// CheckFenceRejected checks fence_rejected on lock before it is recorded,
// naming the field and the rule. The resource is returned escaped
// (termtext.Escape) and clipped: a path may hold any byte, and the
// refusal is recorded whatever the name.
func CheckFenceRejected(lock string, p FenceRejectedPayload) (FenceRejectedPayload, error) {
	if err := ValidateLockName(lock); err != nil {
		return p, err
	}
	switch p.Action {
	case FenceFileWrite, FencePostgresWrite, FenceCheck:
	default:
		return p, Invalid("action", p.Action, "must be file_write, postgres_write or check")
	}
	if p.Resource == "" {
		return p, Invalid("resource", "", "must not be empty")
	}
	p.Resource = termtext.Clip(termtext.Escape(p.Resource), maxFenceResource)
	if p.FencingToken < 1 {
		return p, Invalid("fencing token", strconv.FormatInt(p.FencingToken, 10), "must be a positive integer")
	}
	if p.CurrentToken <= p.FencingToken {
		return p, Invalid("current token", strconv.FormatInt(p.CurrentToken, 10),
			"must be above the refused fencing token "+strconv.FormatInt(p.FencingToken, 10))
	}
	return p, nil
}
