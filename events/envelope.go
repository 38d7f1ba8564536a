package events

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/lockledger/lockledger/internal/termtext"
)

// Envelope is carried by every event. PrevHash and Hash are not part of the
// hashed body; they are stored in their own columns.
type Envelope struct {
	EventID       string `json:"event_id"`
	Seq           int64  `json:"seq"`
	Type          Type   `json:"type"`
	SchemaVersion int    `json:"schema_version"`
	At            string `json:"at"`
	// LockName is "" for a ledger-wide event, whose body has none.
	LockName  string `json:"lock_name,omitempty"`
	RequestID string `json:"request_id"`
	Actor     string `json:"actor"`
	HostID    string `json:"host_id"`
	PID       int    `json:"pid"`
	// UID and User say who ran the process that wrote the event, as the
	// kernel knows it (the real user id, and its name from os/user, ""
	// when the system has none), beside the self-declared Actor. Both are
	// written on every event; events written before lockledger recorded
	// them have neither (nil).
	UID  *int    `json:"uid,omitempty"`
	User *string `json:"user,omitempty"`
}

// SetOSUser records the writing process's user id and user name (clipped
// to the schema's maxLength).
func (e *Envelope) SetOSUser(uid int, user string) {
	user = termtext.Clip(user, maxUserName)
	e.UID, e.User = &uid, &user
}

// maxUserName is the longest user name an event records (its schema's maxLength).
const maxUserName = 256

// OSUser returns the recorded user id and name; ok is false for an event
// written before they were recorded.
func (e *Envelope) OSUser() (uid int, user string, ok bool) {
	if e.UID == nil {
		return 0, "", false
	}
	if e.User != nil {
		user = *e.User
	}
	return *e.UID, user, true
}

// Acquired is lock_acquired's payload. Holder identity beyond the v1 record
// (process start time and boot id) makes "dead holder" exact.
type Acquired struct {
	TTLSeconds    int64             `json:"ttl_seconds"`
	Intent        string            `json:"intent"`
	IntentVersion string            `json:"intent_version"`
	FencingToken  int64             `json:"fencing_token"`
	Metadata      map[string]string `json:"metadata"`
	PIDStart      string            `json:"pid_start"`
	// BootID is the holder's machine and boot, MACHINE/BOOT (proc.Boot);
	// a bare boot id in events written before machines were recorded.
	BootID string `json:"boot_id"`
	// Targets are the extra lock files (other tools' formats) this holding
	// projects, besides ROOT/locks/NAME.lock.
	Targets []Target `json:"targets,omitempty"`
	// Note is the operator's text of a steal that found the lock free (a
	// lock_stolen carries its own Note, which takes this one's place).
	Note string `json:"note,omitempty"`
	// Mode is ModeShared for one of several concurrent holders (a reader,
	// or one slot of a semaphore); absent is an exclusive holder, so that
	// exclusive events read exactly as before shared holders existed.
	Mode string `json:"mode,omitempty"`
	// Limit is a semaphore's number of slots (shared holders only); absent
	// is no limit (plain shared, like flock -s).
	Limit int64 `json:"limit,omitempty"`
	// WaitedSeconds is how long the acquirer waited before it got the
	// lock; absent when it did not wait.
	WaitedSeconds float64 `json:"waited_seconds,omitempty"`
	// PIDNS is the holder's PID namespace (proc.PIDNamespace), in which
	// its pid names its process; 0 where it was unknown. nil in events
	// written before it was recorded and on systems without namespaces.
	PIDNS *int64 `json:"pid_ns,omitempty"`
	// ReleaseSecretSHA256 is the SHA-256 (hex) of the release secret the
	// acquirer alone received, when it asked for one: a release that
	// presents the secret is accepted from any uid. Never the secret.
	ReleaseSecretSHA256 string `json:"release_secret_sha256,omitempty"`
	// Run is true when the holder is a lockledger run (its process runs
	// a command and releases the lock when the command ends): while it
	// lives, a release without force by another process is refused.
	Run bool `json:"run,omitempty"`
}

// Target is one extra lock file a holding projects: a format and an absolute path.
type Target struct {
	Format string `json:"format"`
	Path   string `json:"path"`
}

// String is the target as --file FORMAT:PATH names it.
func (t Target) String() string { return t.Format + ":" + t.Path }

// Heartbeat is lock_heartbeat's payload (none).
type Heartbeat struct{}

// Stolen is lock_stolen's payload. It carries everything lock_acquired does
// for the new holder, plus the lock it replaced.
type Stolen struct {
	Acquired
	PreviousLock     Record `json:"previous_lock"`
	PreviousLockHash string `json:"previous_lock_hash"`
	Reason           string `json:"reason"`
	Note             string `json:"note,omitempty"`
	// HeldBy is the holding taken, with the uid of the process that
	// acquired it, when the live log has that uid.
	HeldBy *Holder `json:"held_by,omitempty"`
}

// Released is lock_released's payload. When Forced, ReleasedRequestID names
// the holder whose lock was released by someone else.
type Released struct {
	HeldDurationSeconds float64 `json:"held_duration_seconds"`
	Result              string  `json:"result"`
	FailureStep         string  `json:"failure_step,omitempty"`
	ExitCode            *int    `json:"exit_code,omitempty"`
	Forced              bool    `json:"forced"`
	ReleasedRequestID   string  `json:"released_request_id,omitempty"`
	FencingToken        int64   `json:"fencing_token,omitempty"` // none for a foreign lock
	// DisplacedBy is set when the ledger's own (stale or dead) holder was
	// displaced by another tool's lock file at one of its paths: that
	// file's holder, its format and its path. The release is then forced.
	// The JSON names keep the word ledgers already store ("superseded").
	DisplacedBy       *Holder `json:"superseded_by,omitempty"`
	DisplacedByFormat string  `json:"superseded_by_format,omitempty"`
	DisplacedByPath   string  `json:"superseded_by_path,omitempty"`
	// Note is the operator's reason for a forced release.
	Note string `json:"note,omitempty"`
	// HeldBy is whose holding was released, with its uid, when the
	// releaser (the envelope) is not the holder itself: another process,
	// actor, uid or host.
	HeldBy *Holder `json:"held_by,omitempty"`
	// AuthorizedBy is AuthorizedByReleaseSecret when the release was
	// accepted from a caller other than the holder because it presented the
	// holding's release secret.
	AuthorizedBy string `json:"authorized_by,omitempty"`
}

// AuthorizedByReleaseSecret is lock_released's authorized_by for a release
// accepted on the holding's release secret.
const AuthorizedByReleaseSecret = "release_secret"

// Refused is action_refused's payload: who asked is the envelope; what
// was refused, why (the error shown to the caller), and the holder at the
// time: HeldBy, or UnreadableFile when the lock's path holds a file that
// does not parse (neither when the lock was free).
type Refused struct {
	Action         string          `json:"action"`
	Error          string          `json:"error"`
	State          string          `json:"state,omitempty"`
	HeldBy         *Holder         `json:"held_by,omitempty"`
	UnreadableFile *UnreadableFile `json:"unreadable_file,omitempty"`
}

// Projected is lock_projected's payload: what one `project` run changed
// for one lock, in words; MovedAside is where an unreadable file at the
// lock's path was kept; BrokenChainAccepted and FirstBadSeq record a
// projection made with --accept-broken-chain.
type Projected struct {
	Changes             []string `json:"changes"`
	MovedAside          string   `json:"moved_aside,omitempty"`
	BrokenChainAccepted bool     `json:"broken_chain_accepted,omitempty"`
	FirstBadSeq         int64    `json:"first_bad_seq,omitempty"`
}

// JobProcessesPayload is job_processes's payload: the processes of the
// job of JobRequestID that were still running, and what was done to them.
type JobProcessesPayload struct {
	JobRequestID string `json:"job_request_id"`
	PIDs         []int  `json:"pids"`
	Action       string `json:"action"`
	Note         string `json:"note,omitempty"`
}

// Exported is ledger_exported's payload: what an export read and where it
// went. Since and Until are the bounds asked for (envelope time format),
// FirstSeq..LastSeq the contiguous range written (none when Events is 0).
type Exported struct {
	Since    string `json:"since,omitempty"`
	Until    string `json:"until,omitempty"`
	FirstSeq int64  `json:"first_seq,omitempty"`
	LastSeq  int64  `json:"last_seq,omitempty"`
	Events   int64  `json:"events"`
	Format   string `json:"format"`
	// Destination is DestinationStdout or the absolute path of the file.
	Destination string `json:"destination"`
}

// Pruned is ledger_pruned's payload, and ledger_unpruned's (the same
// events back, from the same archive): events FirstSeq..LastSeq (Events
// of them) left the live store for an archive; HeadHash is seq LastSeq's
// chain hash, from which the live log's first event chains; File is where
// the archive was when it was checked; Note is PruneNote's text, which
// names the archive's SHA-256 and the tree's root at size LastSeq.
type Pruned struct {
	FirstSeq int64  `json:"first_seq"`
	LastSeq  int64  `json:"last_seq"`
	Events   int64  `json:"events"`
	HeadHash string `json:"head_hash"`
	File     string `json:"file,omitempty"`
	Note     string `json:"note"`
}

// PruneNote is ledger_pruned's note: the archive's SHA-256 and the tree
// root at the archive's last seq, both hex.
func PruneNote(archiveSHA256, root string) string {
	return "archive sha256:" + archiveSHA256 + " root:" + root
}

// ParsePruneNote reads PruneNote's text back; ok false for any other.
func ParsePruneNote(note string) (archiveSHA256, root string, ok bool) {
	rest, ok := strings.CutPrefix(note, "archive sha256:")
	if !ok {
		return "", "", false
	}
	archiveSHA256, root, ok = strings.Cut(rest, " root:")
	return archiveSHA256, root, ok && len(archiveSHA256) == 64 && len(root) == 64
}

// Signer is signer_added's payload, and signer_removed's: the verifier
// key (checkpoint.NewVerifier's form) of a key that signs the ledger's
// checkpoints, its role (what the owner calls it: "owner" may register
// and revoke others), and Statement, the owner's signed note of the
// registration (checkpoint.SignerStatement), which is what makes it
// count: anyone who can write the database can append the event.
type Signer struct {
	Key       string `json:"key"`
	Role      string `json:"role"`
	Statement string `json:"statement"`
}

// RoleOwner is the role of a signer that may register and revoke others.
const RoleOwner = "owner"

// Verified is ledger_verified's payload: what a verify checked and found.
// FirstSeq..LastSeq and HeadHash are the events checked (the ledger's state
// at the read, which this event follows), File the export checked instead
// of the ledger (verify --file).
type Verified struct {
	Result      string `json:"result"` // AuditOK or AuditFailed
	Events      int64  `json:"events"`
	Problems    int    `json:"problems"`
	FirstBadSeq int64  `json:"first_bad_seq,omitempty"`
	FirstSeq    int64  `json:"first_seq,omitempty"`
	LastSeq     int64  `json:"last_seq,omitempty"`
	HeadHash    string `json:"head_hash,omitempty"`
	File        string `json:"file,omitempty"`
}

// LedgerProjectedPayload is ledger_projected's payload: one project run,
// in counts (its lock_projected events say what changed for each lock).
// A refused run (a damaged log) counts what it replayed and changed
// nothing; Problems and FirstBadSeq are the damage, as with
// BrokenChainAccepted for a run forced through it.
type LedgerProjectedPayload struct {
	Result              string `json:"result"` // AuditOK or AuditRefused
	Events              int64  `json:"events"`
	Locks               int    `json:"locks"`
	RowsChanged         int    `json:"rows_changed"`
	FilesChanged        int    `json:"files_changed"`
	Problems            int    `json:"problems,omitempty"`
	BrokenChainAccepted bool   `json:"broken_chain_accepted,omitempty"`
	FirstBadSeq         int64  `json:"first_bad_seq,omitempty"`
	// RollbackAccepted is the ledger and head the host's root had pinned,
	// given up by project --accept-rollback.
	RollbackAccepted *Pin `json:"rollback_accepted,omitempty"`
}

// Pin is a ledger and its head as a host last saw it (its id, and the seq
// and hash of its last event; 0 and "" for a ledger without events).
type Pin struct {
	LedgerID string `json:"ledger_id"`
	Seq      int64  `json:"seq"`
	Hash     string `json:"hash,omitempty"`
}

// HeartbeatFailedPayload is heartbeat_failed's payload.
type HeartbeatFailedPayload struct {
	ConsecutiveFailures int    `json:"consecutive_failures"`
	Error               string `json:"error"`
	LockLost            bool   `json:"lock_lost"`
	// HeldBy is whose holding failed, when the process that records it
	// (the envelope) is not the holder's (a loss recorded after it exited).
	HeldBy *Holder `json:"held_by,omitempty"`
	// RecordedBy is the caller that found the holding lost when it is not
	// the holding's process (a heartbeat --request-id R after R's lock was
	// stolen): the envelope's actor, pid and host are then the holding's,
	// so that the failure is counted against whose holding it was.
	RecordedBy *Caller `json:"recorded_by,omitempty"`
}

// Caller is a process that wrote an event about a holding not its own.
type Caller struct {
	Actor  string `json:"actor"`
	HostID string `json:"host_id"`
	PID    int    `json:"pid"`
}

// Blocked is acquire_blocked's payload. What blocked is one of HeldBy
// (the holder) and UnreadableFile (a file at the lock's path that does not
// parse, held to fail safe); events written before UnreadableFile existed
// always carry HeldBy.
type Blocked struct {
	HeldBy         *Holder         `json:"held_by,omitempty"`
	UnreadableFile *UnreadableFile `json:"unreadable_file,omitempty"`
	State          string          `json:"state"`
	WaitedSeconds  float64         `json:"waited_seconds"`
	Foreign        bool            `json:"foreign,omitempty"`
	// Mode and Limit are what the caller asked for, as in Acquired.
	Mode  string `json:"mode,omitempty"`
	Limit int64  `json:"limit,omitempty"`
	// Until is set when a waiter records its place in the lock's queue (it
	// joins, or renews the place): it keeps the place until then (the
	// store's clock, at most WaiterTTL after the event), or until its
	// request's next acquisition or acquire_blocked on the lock, or until
	// its process (the envelope's host and pid, PIDStart, BootID) is
	// provably gone.
	Until    string `json:"until,omitempty"`
	PIDStart string `json:"pid_start,omitempty"`
	BootID   string `json:"boot_id,omitempty"`
	// QueuedSeq and QueuedAt are set on a renewal: the seq and time of the
	// record with which the waiter joined the queue, which keep its place.
	QueuedSeq int64  `json:"queued_seq,omitempty"`
	QueuedAt  string `json:"queued_at,omitempty"`
	// PIDNS is the waiter's PID namespace, as Record.PIDNS: a waiter in
	// another one (or one not known) is never judged gone by its pid.
	PIDNS *int64 `json:"pid_ns,omitempty"`
	// Reason is BlockedByQueue when the lock was free (or its holder dead)
	// but queued waiters came first; HeldBy is then empty.
	Reason string `json:"reason,omitempty"`
}

// Event is an envelope with its payload, its canonical body and its chain links.
type Event struct {
	Envelope
	Payload  any    // one of the payload structs above, matching Type
	Body     []byte // canonical JSON of envelope + payload; exactly the hashed bytes
	PrevHash string
	Hash     string
}

// Seal fills Body and Hash for an event whose envelope, payload and PrevHash
// are set.
func (e *Event) Seal() error {
	body, err := BuildBody(e.Envelope, e.Payload)
	if err != nil {
		return err
	}
	e.Body = body
	e.Hash = ChainHash(e.Seq, e.PrevHash, body)
	return nil
}

// BuildBody merges envelope and payload into one flat object and renders it
// canonically. The merged object already holds what Canonical would decode
// (json.Number, strings, maps), so it is encoded once, as Canonical does.
func BuildBody(env Envelope, payload any) ([]byte, error) {
	bm := bodyMapPool.Get().(*bodyMaps)
	defer func() {
		clear(bm.merged)
		clear(bm.payload)
		bodyMapPool.Put(bm)
	}()
	m, part := bm.merged, bm.payload
	if err := remarshal(env, &m); err != nil {
		return nil, err
	}
	if payload != nil {
		if err := remarshal(payload, &part); err != nil {
			return nil, err
		}
	}
	for k, val := range part {
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("events: payload field %q collides with the envelope", k)
		}
		m[k] = val
	}
	return encodeCanonical(m)
}

// bodyMaps are the maps BuildBody decodes an envelope and a payload into
// (a decoder fills a map it is given), emptied after each body and kept,
// with the room they grew to, for the next.
type bodyMaps struct{ merged, payload map[string]any }

var bodyMapPool = sync.Pool{New: func() any {
	return &bodyMaps{merged: map[string]any{}, payload: map[string]any{}}
}}

// jsonPipe is an encoder and a decoder on one buffer, used as a stream:
// each value encoded into it is decoded from it at once, and the buffer,
// the decoder's and the encoder's are kept for the next value rather than
// made again for each.
type jsonPipe struct {
	buf bytes.Buffer
	enc *json.Encoder
	dec *json.Decoder
}

var jsonPipes = sync.Pool{New: func() any {
	p := &jsonPipe{}
	p.enc = json.NewEncoder(&p.buf)
	p.dec = json.NewDecoder(&p.buf)
	p.dec.UseNumber()
	return p
}}

// remarshal decodes v's JSON (json.Marshal's) into out, numbers as
// json.Number.
func remarshal(v, out any) error {
	p := jsonPipes.Get().(*jsonPipe)
	err := p.enc.Encode(v)
	if err == nil {
		err = p.dec.Decode(out)
	}
	if err != nil {
		// A decoder that failed keeps its error, and the buffer what it
		// did not read: the pipe is not used again.
		return err
	}
	jsonPipes.Put(p)
	return nil
}

// Canonical renders v as canonical JSON: object keys sorted, no
// insignificant whitespace, no HTML escaping, numbers as written.
func Canonical(v any) ([]byte, error) {
	var generic any
	if err := remarshal(v, &generic); err != nil {
		return nil, err
	}
	return encodeCanonical(generic)
}

// encodeCanonical renders generic JSON values (as a decoder with
// UseNumber gives them): keys sorted, no HTML escaping, no newline.
func encodeCanonical(generic any) ([]byte, error) {
	b, err := encodeWith(canonicalEncoders, generic)
	if err != nil {
		return nil, err
	}
	return b[:len(b)-1], nil
}

// pooledEncoder is a json.Encoder without HTML escaping on a buffer of its
// own, both kept between values: a value's bytes are copied out once, at
// their length. A new indenting encoder would grow its second buffer by
// doubling for each value; a new encoder without indent writes a value in
// one Write, which a new buffer takes at its length, and saves only itself.
type pooledEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// encoderPool is a pool of pooledEncoders, indented by indent if it is not "".
func encoderPool(indent string) *sync.Pool {
	return &sync.Pool{New: func() any {
		e := &pooledEncoder{}
		e.enc = json.NewEncoder(&e.buf)
		e.enc.SetEscapeHTML(false)
		e.enc.SetIndent("", indent)
		return e
	}}
}

var (
	canonicalEncoders = encoderPool("")
	fileEncoders      = encoderPool("  ")
)

// encodeWith is v encoded by an encoder of pool, with the encoder's
// trailing newline. An encoder that fails has written nothing.
func encodeWith(pool *sync.Pool, v any) ([]byte, error) {
	e := pool.Get().(*pooledEncoder)
	defer pool.Put(e)
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.Clone(e.buf.Bytes()), nil
}

// ChainHash is hex(sha256(decimal(seq) "\n" prev_hash "\n" body)).
func ChainHash(seq int64, prevHash string, body []byte) string {
	h := sha256.New()
	h.Write(strconv.AppendInt(nil, seq, 10))
	h.Write([]byte{'\n'})
	h.Write([]byte(prevHash))
	h.Write([]byte{'\n'})
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// Genesis is the prev_hash of seq 1: hex(sha256("lockledger genesis\n" ledger_id)).
func Genesis(ledgerID string) string {
	sum := sha256.Sum256([]byte("lockledger genesis\n" + ledgerID))
	return hex.EncodeToString(sum[:])
}

// Decode parses a stored body back into its envelope and typed payload.
func Decode(body []byte) (Envelope, any, error) {
	var env Envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return env, nil, fmt.Errorf("events: decode envelope: %w", err)
	}
	newPayload, ok := payloads[env.Type]
	if !ok {
		return env, nil, fmt.Errorf("events: unknown type %q", env.Type)
	}
	p := newPayload()
	if err := json.Unmarshal(body, p); err != nil {
		return env, nil, fmt.Errorf("events: decode %s payload: %w", env.Type, err)
	}
	return env, p, nil
}

// payloads makes the payload of each event type, for Decode.
var payloads = map[Type]func() any{
	LockAcquired:    func() any { return &Acquired{} },
	LockHeartbeat:   func() any { return &Heartbeat{} },
	LockStolen:      func() any { return &Stolen{} },
	LockReleased:    func() any { return &Released{} },
	HeartbeatFailed: func() any { return &HeartbeatFailedPayload{} },
	AcquireBlocked:  func() any { return &Blocked{} },
	ActionRefused:   func() any { return &Refused{} },
	LockProjected:   func() any { return &Projected{} },
	JobProcesses:    func() any { return &JobProcessesPayload{} },
	LedgerExported:  func() any { return &Exported{} },
	LedgerVerified:  func() any { return &Verified{} },
	LedgerProjected: func() any { return &LedgerProjectedPayload{} },
	LedgerPruned:    func() any { return &Pruned{} },
	LedgerUnpruned:  func() any { return &Pruned{} },
	FenceRejected:   func() any { return &FenceRejectedPayload{} },
	SignerAdded:     func() any { return &Signer{} },
	SignerRemoved:   func() any { return &Signer{} },
}
