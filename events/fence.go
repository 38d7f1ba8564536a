package events

import (
	"strconv"

	"github.com/lockledger/lockledger/internal/termtext"
)

// The fences that refuse a write (fence_rejected's fence).
const (
	FenceFileWrite     = "file_write"     // a file's sidecar token (package fence's WriteFile, lockledger fence write)
	FencePostgresWrite = "postgres_write" // the lockledger_fences trigger, in the database
	FenceCheck         = "check"          // a Go service's own check (package fence's Fence)
)

// FenceRejectedPayload is fence_rejected's payload: Fence refused a write
// to Resource carrying StaleToken, because the resource had already seen
// CurrentToken, a later holding's. Who tried is the envelope (its host,
// pid and request); the lock is its lock_name. StaleToken is not named
// fencing_token: there (lock_acquired, lock_stolen, lock_released) it is
// a holding's token as the ledger gave it, while this one is whatever the
// writer presented, below the current holding's by definition.
type FenceRejectedPayload struct {
	Fence        string `json:"fence"`
	Resource     string `json:"resource"`
	StaleToken   int64  `json:"stale_token"`
	CurrentToken int64  `json:"current_token"`
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
	switch p.Fence {
	case FenceFileWrite, FencePostgresWrite, FenceCheck:
	default:
		return p, Invalid("fence", p.Fence, "must be file_write, postgres_write or check")
	}
	if p.Resource == "" {
		return p, Invalid("resource", "", "must not be empty")
	}
	p.Resource = termtext.Clip(termtext.Escape(p.Resource), maxFenceResource)
	if p.StaleToken < 1 {
		return p, Invalid("stale token", strconv.FormatInt(p.StaleToken, 10), "must be a positive integer")
	}
	if p.CurrentToken <= p.StaleToken {
		return p, Invalid("current token", strconv.FormatInt(p.CurrentToken, 10),
			"must be above the stale token "+strconv.FormatInt(p.StaleToken, 10))
	}
	return p, nil
}
