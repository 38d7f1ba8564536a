package events

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
