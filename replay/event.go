package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
	"unsafe"

	"github.com/lockledger/lockledger/events"
)

// Event is one stored event: its envelope, every type-specific field
// flattened into one struct (decoded with a single json.Unmarshal, whatever
// the type), and its chain links. Fields a type does not carry stay zero.
type Event struct {
	events.Envelope

	// lock_acquired and lock_stolen (the new holder)
	TTLSeconds    int64             `json:"ttl_seconds"`
	Intent        string            `json:"intent"`
	IntentVersion string            `json:"intent_version"`
	FencingToken  int64             `json:"fencing_token"` // also lock_released
	Metadata      map[string]string `json:"metadata"`
	PIDStart      string            `json:"pid_start"`
	BootID        string            `json:"boot_id"`
	Targets       []events.Target   `json:"targets"` // extra lock files in other tools' formats
	Mode          string            `json:"mode"`    // shared, or "" / exclusive; also acquire_blocked
	Limit         int64             `json:"limit"`   // a semaphore's slots; also acquire_blocked
	PIDNS         *int64            `json:"pid_ns"`  // the holder's PID namespace; nil before it was recorded
	Run           bool              `json:"run"`     // held by lockledger run, whose job a plain release must not cut short
	// the SHA-256 (hex) of the holding's release secret, when its acquirer asked for one
	ReleaseSecretSHA256 string `json:"release_secret_sha256"`

	// lock_stolen
	PreviousLock     *events.Record `json:"previous_lock"`
	PreviousLockHash string         `json:"previous_lock_hash"`
	Reason           string         `json:"reason"`
	Note             string         `json:"note"` // also job_processes

	// signer_added and signer_removed
	Key       string `json:"key"`
	Role      string `json:"role"`
	Statement string `json:"statement"`

	// lock_released
	HeldDurationSeconds float64 `json:"held_duration_seconds"`
	Result              string  `json:"result"` // also ledger_verified, ledger_projected
	FailureStep         string  `json:"failure_step"`
	ExitCode            *int    `json:"exit_code"`
	Forced              bool    `json:"forced"`
	ReleasedRequestID   string  `json:"released_request_id"`
	AuthorizedBy        string  `json:"authorized_by"` // release_secret: accepted on the holding's release secret
	// another tool's lock file that displaced the released holder (the
	// JSON names keep the word ledgers already store)
	DisplacedBy       *events.Holder `json:"superseded_by"`
	DisplacedByFormat string         `json:"superseded_by_format"`
	DisplacedByPath   string         `json:"superseded_by_path"`

	// heartbeat_failed
	ConsecutiveFailures int    `json:"consecutive_failures"`
	Error               string `json:"error"` // also action_refused
	LockLost            bool   `json:"lock_lost"`
	// the caller that found the holding lost, when not its process
	RecordedBy *events.Caller `json:"recorded_by"`

	// acquire_blocked (held_by, unreadable_file and state also
	// action_refused): what blocked is the holder, or a file at the lock's
	// path that does not parse
	HeldBy         *events.Holder         `json:"held_by"`
	UnreadableFile *events.UnreadableFile `json:"unreadable_file"`
	State          string                 `json:"state"`
	WaitedSeconds  float64                `json:"waited_seconds"` // also lock_acquired and lock_stolen of a waiter
	Foreign        bool                   `json:"foreign"`
	// a waiter's record of its place in the queue: until (the ledger-wide
	// field below), and on a renewal the seq and time it joined with
	QueuedSeq int64  `json:"queued_seq"`
	QueuedAt  string `json:"queued_at"`

	// action_refused: the refused action; job_processes: what was done
	// to the processes
	Action string `json:"action"`

	// lock_projected (broken_chain_accepted and first_bad_seq also
	// ledger_projected; first_bad_seq also ledger_verified)
	Changes             []string `json:"changes"`
	MovedAside          string   `json:"moved_aside"`
	BrokenChainAccepted bool     `json:"broken_chain_accepted"`
	FirstBadSeq         int64    `json:"first_bad_seq"`
	// ledger_projected of project --accept-rollback: the ledger and head
	// the host's root had pinned, given up
	RollbackAccepted *events.Pin `json:"rollback_accepted"`

	// job_processes
	JobRequestID string `json:"job_request_id"`
	PIDs         []int  `json:"pids"`

	// The ledger-wide events. ledger_exported: the range asked for and
	// written, how many events, in what format, to where.
	Since       string `json:"since"`
	Until       string `json:"until"`
	FirstSeq    int64  `json:"first_seq"` // also ledger_verified
	LastSeq     int64  `json:"last_seq"`  // also ledger_verified
	Events      int64  `json:"events"`    // also ledger_verified, ledger_projected
	Format      string `json:"format"`
	Destination string `json:"destination"`
	// ledger_verified (result as lock_released's field, also
	// ledger_projected's; problems also ledger_projected)
	Problems int    `json:"problems"`
	HeadHash string `json:"head_hash"`
	File     string `json:"file"`
	// ledger_projected
	Locks        int `json:"locks"`
	RowsChanged  int `json:"rows_changed"`
	FilesChanged int `json:"files_changed"`

	// fence_rejected: the fence that refused, the resource, the token the
	// refused write carried and the resource's (StaleToken is no
	// holding's, so it is not FencingToken)
	Fence        string `json:"fence"`
	Resource     string `json:"resource"`
	StaleToken   int64  `json:"stale_token"`
	CurrentToken int64  `json:"current_token"`

	// Time is At parsed.
	Time time.Time `json:"-"`
	// Body is the stored canonical body: exactly the hashed bytes.
	Body     []byte `json:"-"`
	PrevHash string `json:"-"`
	Hash     string `json:"-"`
}

// DecodeEvent parses a stored body. seq is the row's seq, used only in
// the error message. The event's strings share body's memory (see
// decodeFastString): body must not change while the event is in use.
func DecodeEvent(seq int64, body []byte) (*Event, error) {
	ev := &Event{}
	if err := decodeStringInto(seq, unsafe.String(unsafe.SliceData(body), len(body)), ev); err != nil {
		return nil, err
	}
	ev.Body = body
	return ev, nil
}

// decodeBody decodes body into ev (zero) as encoding/json does: by
// decodeFastString when it takes the body, else by encoding/json.
func decodeBody(body string, ev *Event) error {
	if fastDecode && decodeFastString(body, ev) {
		return nil
	}
	*ev = Event{}
	return json.Unmarshal([]byte(body), ev)
}

// decodeStringInto is DecodeEvent into ev (zero) for a body held as a
// string; the event has no Body (a fold reads none).
func decodeStringInto(seq int64, body string, ev *Event) error {
	if err := decodeBody(body, ev); err != nil {
		return fmt.Errorf("replay: event seq %d: body does not decode (run verify): %w", seq, err)
	}
	if !ev.Type.Valid() {
		return fmt.Errorf("replay: event seq %d: unknown type %q (run verify)", seq, ev.Type)
	}
	t, err := events.ParseTime(ev.At)
	if err != nil {
		return fmt.Errorf("replay: event seq %d: at %q: %w (run verify)", seq, ev.At, err)
	}
	ev.Time = t
	return nil
}

// JSON renders the event as history, timeline and the JSON Lines formats
// print it: the body's fields (envelope and payload, seq included) followed
// by prev_hash and hash. The body is spliced in verbatim, so the output
// holds the exact hashed bytes' values.
func (e *Event) JSON() []byte {
	return withLinks(e.Body, e.PrevHash, e.Hash)
}

func withLinks(body []byte, prev, hash string) []byte {
	b := bytes.TrimSpace(body)
	var buf bytes.Buffer
	buf.Grow(len(b) + 160)
	if len(b) >= 2 && b[0] == '{' && b[len(b)-1] == '}' {
		buf.Write(b[:len(b)-1])
		if len(bytes.TrimSpace(b[1:len(b)-1])) > 0 {
			buf.WriteByte(',')
		}
	} else {
		buf.WriteString(`{"body":`)
		buf.Write(jsonString(string(b)))
		buf.WriteByte(',')
	}
	buf.WriteString(`"prev_hash":`)
	buf.Write(jsonString(prev))
	buf.WriteString(`,"hash":`)
	buf.Write(jsonString(hash))
	buf.WriteByte('}')
	return buf.Bytes()
}

func jsonString(s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return b
}
