package schema

// ValidateEvent is a hand-written validator that accepts exactly the
// bodies the embedded JSON Schemas accept, as the library runs them
// (reference.Validate: encoding/json's Decoder with UseNumber, then
// santhosh-tekuri/jsonschema with Draft 2020-12 and AssertFormat), in one
// pass over the bytes and without building a value tree. Keeping the
// library out of the binary saves every process its init (it compiles the
// draft's metaschemas) and the compilation of the schema it uses.
//
// It mirrors the *.json files in this directory rule by rule. When a schema
// file changes, update this file to match: TestFastMirrorsSchemaFiles holds
// the schema files' sha256 and fails until it is updated too, and
// FuzzFastMatchesSchema / TestFastMatchesSchema compare the two validators.
//
// What "exactly" covers, beyond the keywords themselves:
//   - JSON syntax as encoding/json reads it: strict RFC 8259 grammar,
//     control characters refused in strings, invalid UTF-8 accepted (and
//     read as U+FFFD), nesting deeper than 10000 refused, and after the
//     value only white space.
//   - Duplicate member names: the last one wins, as in the decoded map.
//     Keys and string values are compared after unescaping.
//   - Numbers are exact decimals (json.Number and math/big): 1.0 and 1e0 are
//     integers, 0.5e1 is 5; the "int64" format then refuses an integer not
//     written as one or beyond int64 (strconv.ParseInt), and "float64" a
//     number beyond float64 (strconv.ParseFloat). A number whose exponent
//     math/big refuses to expand (|exponent| > 10^6, or one that does not
//     fit in int64) makes the library panic on a nil *big.Rat wherever it
//     compares or type-checks the number, and reference.Validate turns
//     that panic into a refusal; it is refused here too.
//   - String lengths count runes of the decoded string; patterns and
//     formats apply to the decoded string.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/lockledger/lockledger/events"
)

// kind is the schema a body is checked against.
type kind uint8

const (
	kAcquired kind = iota
	kHeartbeat
	kStolen
	kReleased
	kHeartbeatFailed
	kBlocked
	kRefused
	kProjected
	kJobProcesses
	kExported
	kVerified
	kLedgerProjected
	kLockFile
)

func kindOf(t events.Type) (kind, bool) {
	switch t {
	case events.LockAcquired:
		return kAcquired, true
	case events.LockHeartbeat:
		return kHeartbeat, true
	case events.LockStolen:
		return kStolen, true
	case events.LockReleased:
		return kReleased, true
	case events.HeartbeatFailed:
		return kHeartbeatFailed, true
	case events.AcquireBlocked:
		return kBlocked, true
	case events.ActionRefused:
		return kRefused, true
	case events.LockProjected:
		return kProjected, true
	case events.JobProcesses:
		return kJobProcesses, true
	case events.LedgerExported:
		return kExported, true
	case events.LedgerVerified:
		return kVerified, true
	case events.LedgerProjected:
		return kLedgerProjected, true
	case LockFile:
		return kLockFile, true
	}
	return 0, false
}

// verr is one violation: ptr is the JSON pointer of the value (relative
// to the value being checked while it travels up), rule the keyword.
type verr struct {
	ptr, rule, msg string
}

// under prefixes the pointer with one reference token.
func (e *verr) under(token string) *verr {
	token = strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1")
	e.ptr = "/" + token + e.ptr
	return e
}

func (e *verr) detail() string {
	p := e.ptr
	if p == "" {
		p = "/"
	}
	if e.rule == "" {
		return p + ": " + e.msg
	}
	return p + ": " + e.rule + ": " + e.msg
}

// ---------------------------------------------------------------------
// The document

type validator struct {
	s scanner
	t string // the schema's name: the event type, or LockFile
	k kind   // its kind: a field of the same name may differ by type (state, action)
}

func (v *validator) document(k kind) *verr {
	s := &v.s
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		jk := s.value()
		if s.err != "" {
			return s.syntaxErr()
		}
		s.ws()
		if s.i < len(s.b) {
			return &verr{msg: "trailing data after the JSON value"}
		}
		return &verr{rule: "type", msg: "expected object, but got " + jk.String()}
	}
	var e *verr
	if k == kLockFile {
		e = v.record(&lockFileSchema, lockFileAll, lockFileRequired)
	} else {
		e = v.record(&eventSchema, eventAllowed[k], eventRequired[k])
	}
	if s.err != "" {
		return s.syntaxErr()
	}
	s.ws()
	if s.i < len(s.b) {
		return &verr{msg: "trailing data after the JSON value"}
	}
	return e
}

// recordSchema describes an object with a fixed set of properties.
type recordSchema struct {
	id    recordID
	names []string
	// extra is the keyword that refuses any other property.
	extra string
	// together is a set of properties present all or none
	// (dependentRequired, each requiring the others).
	together uint64
}

type recordID uint8

const (
	rEvent recordID = iota
	rLockFile
	rPreviousLock // lock_stolen's previous_lock: a lock file whose metadata values are strings
	rHolder
	rTarget
)

// lookup returns the index of a property in rs.names, or -1. (A switch,
// not function values: v would escape through an indirect call.)
func (rs *recordSchema) lookup(key []byte) int {
	switch rs.id {
	case rEvent:
		return eventLookup(key)
	case rLockFile, rPreviousLock:
		return lockFileLookup(key)
	case rHolder:
		return holderLookup(key)
	default:
		return targetLookup(key)
	}
}

func (rs *recordSchema) check(v *validator, f int) *verr {
	switch rs.id {
	case rEvent:
		return checkEventField(v, f)
	case rLockFile:
		return checkLockFileField(v, f, false)
	case rPreviousLock:
		return checkLockFileField(v, f, true)
	case rHolder:
		return checkHolderField(v, f)
	default:
		return checkTargetField(v, f)
	}
}

// record checks the object at the scanner: every member is a known field
// in allowed and valid by check (the last of duplicate members counts),
// every field of required is present. It consumes the whole value.
func (v *validator) record(rs *recordSchema, allowed, required uint64) *verr {
	s := &v.s
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		jk := s.value()
		return typeErr("object", jk)
	}
	var seen uint64
	var errs []*verr // per field, allocated on the first violation
	var extra *verr
	more := s.openObject()
	for more && s.err == "" {
		ks, ke, plain := s.key()
		if s.err != "" {
			break
		}
		var f int
		if plain {
			f = rs.lookup(s.b[ks:ke])
		} else {
			f = rs.lookup(s.decode(ks, ke))
		}
		if f < 0 || allowed&(1<<uint(f)) == 0 {
			s.value()
			if extra == nil {
				name := string(s.b[ks:ke])
				if !plain {
					name = string(s.decode(ks, ke))
				}
				extra = &verr{rule: rs.extra, msg: "property " + strconv.Quote(name) + " is not allowed"}
			}
		} else {
			seen |= 1 << uint(f)
			e := rs.check(v, f)
			if e != nil {
				if errs == nil {
					errs = make([]*verr, len(rs.names))
				}
				errs[f] = e.under(rs.names[f])
			} else if errs != nil {
				errs[f] = nil
			}
		}
		more = s.nextMember()
	}
	s.closeObject()
	if s.err != "" {
		return nil
	}
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	if missing := required &^ seen; missing != 0 {
		var names []string
		for f := range rs.names {
			if missing&(1<<uint(f)) != 0 {
				names = append(names, strconv.Quote(rs.names[f]))
			}
		}
		return &verr{rule: "required", msg: "missing properties: " + strings.Join(names, ", ")}
	}
	if got := seen & rs.together; got != 0 && got != rs.together {
		var names []string
		for f := range rs.names {
			if rs.together&^got&(1<<uint(f)) != 0 {
				names = append(names, strconv.Quote(rs.names[f]))
			}
		}
		return &verr{rule: "dependentRequired", msg: "missing properties: " + strings.Join(names, ", ")}
	}
	return extra
}

// ---------------------------------------------------------------------
// Event bodies: envelope.json, defs.json's acquired, and one file per type.

const (
	fEventID = iota
	fSeq
	fType
	fSchemaVersion
	fAt
	fLockName
	fRequestID
	fActor
	fHostID
	fPID
	fUID
	fUser
	// defs.json#/$defs/acquired (lock_acquired, lock_stolen)
	fTTLSeconds
	fIntent
	fIntentVersion
	fFencingToken // also lock_released
	fMetadata
	fPIDStart
	fBootID
	fTargets
	// lock_stolen
	fPreviousLock
	fPreviousLockHash
	fReason
	fNote
	// lock_released
	fHeldDurationSeconds
	fResult
	fFailureStep
	fExitCode
	fForced
	fReleasedRequestID
	// heartbeat_failed
	fConsecutiveFailures
	fError
	fLockLost
	// acquire_blocked (held_by and state also action_refused)
	fHeldBy
	fState
	fWaitedSeconds
	fForeign
	// action_refused (also error, state, held_by); job_processes's action
	fAction
	// lock_projected
	fChanges
	fMovedAside
	fBrokenChainAccepted
	fFirstBadSeq
	// job_processes (also action, note)
	fJobRequestID
	fPIDs
	// lock_released's supersession
	fSupersededBy
	fSupersededByFormat
	fSupersededByPath
	// ledger_exported (first_seq, last_seq and events also ledger_verified;
	// events also ledger_projected)
	fSince
	fUntil
	fFirstSeq
	fLastSeq
	fEvents
	fFormat
	fDestination
	// ledger_verified (result as lock_released's name, first_bad_seq as
	// lock_projected's; problems also ledger_projected)
	fProblems
	fHeadHash
	fFile
	// ledger_projected (result, events, problems, broken_chain_accepted
	// and first_bad_seq as above)
	fLocks
	fRowsChanged
	fFilesChanged
	// defs.json's acquired (also acquire_blocked)
	fMode
	fLimit
	nEventFields
)

// The field sets are bit masks of a uint64.
var _ [64 - nEventFields]struct{}

var eventNames = []string{
	fEventID: "event_id", fSeq: "seq", fType: "type", fSchemaVersion: "schema_version", fAt: "at",
	fLockName: "lock_name", fRequestID: "request_id", fActor: "actor", fHostID: "host_id", fPID: "pid",
	fUID: "uid", fUser: "user",
	fTTLSeconds: "ttl_seconds", fIntent: "intent", fIntentVersion: "intent_version", fFencingToken: "fencing_token",
	fMetadata: "metadata", fPIDStart: "pid_start", fBootID: "boot_id", fTargets: "targets",
	fPreviousLock: "previous_lock", fPreviousLockHash: "previous_lock_hash", fReason: "reason", fNote: "note",
	fHeldDurationSeconds: "held_duration_seconds", fResult: "result", fFailureStep: "failure_step",
	fExitCode: "exit_code", fForced: "forced", fReleasedRequestID: "released_request_id",
	fConsecutiveFailures: "consecutive_failures", fError: "error", fLockLost: "lock_lost",
	fHeldBy: "held_by", fState: "state", fWaitedSeconds: "waited_seconds", fForeign: "foreign",
	fAction: "action", fChanges: "changes", fMovedAside: "moved_aside", fBrokenChainAccepted: "broken_chain_accepted",
	fFirstBadSeq: "first_bad_seq", fJobRequestID: "job_request_id", fPIDs: "pids", fSupersededBy: "superseded_by",
	fSupersededByFormat: "superseded_by_format", fSupersededByPath: "superseded_by_path",
	fSince: "since", fUntil: "until", fFirstSeq: "first_seq", fLastSeq: "last_seq", fEvents: "events", fFormat: "format",
	fDestination: "destination", fProblems: "problems", fHeadHash: "head_hash", fFile: "file", fLocks: "locks",
	fRowsChanged: "rows_changed", fFilesChanged: "files_changed", fMode: "mode", fLimit: "limit",
}

func eventLookup(k []byte) int {
	switch string(k) {
	case "event_id":
		return fEventID
	case "seq":
		return fSeq
	case "type":
		return fType
	case "schema_version":
		return fSchemaVersion
	case "at":
		return fAt
	case "lock_name":
		return fLockName
	case "request_id":
		return fRequestID
	case "actor":
		return fActor
	case "host_id":
		return fHostID
	case "pid":
		return fPID
	case "uid":
		return fUID
	case "user":
		return fUser
	case "ttl_seconds":
		return fTTLSeconds
	case "intent":
		return fIntent
	case "intent_version":
		return fIntentVersion
	case "fencing_token":
		return fFencingToken
	case "metadata":
		return fMetadata
	case "pid_start":
		return fPIDStart
	case "boot_id":
		return fBootID
	case "targets":
		return fTargets
	case "previous_lock":
		return fPreviousLock
	case "previous_lock_hash":
		return fPreviousLockHash
	case "reason":
		return fReason
	case "note":
		return fNote
	case "held_duration_seconds":
		return fHeldDurationSeconds
	case "result":
		return fResult
	case "failure_step":
		return fFailureStep
	case "exit_code":
		return fExitCode
	case "forced":
		return fForced
	case "released_request_id":
		return fReleasedRequestID
	case "consecutive_failures":
		return fConsecutiveFailures
	case "error":
		return fError
	case "lock_lost":
		return fLockLost
	case "held_by":
		return fHeldBy
	case "state":
		return fState
	case "waited_seconds":
		return fWaitedSeconds
	case "foreign":
		return fForeign
	case "action":
		return fAction
	case "changes":
		return fChanges
	case "moved_aside":
		return fMovedAside
	case "broken_chain_accepted":
		return fBrokenChainAccepted
	case "first_bad_seq":
		return fFirstBadSeq
	case "job_request_id":
		return fJobRequestID
	case "pids":
		return fPIDs
	case "superseded_by":
		return fSupersededBy
	case "superseded_by_format":
		return fSupersededByFormat
	case "superseded_by_path":
		return fSupersededByPath
	case "since":
		return fSince
	case "until":
		return fUntil
	case "first_seq":
		return fFirstSeq
	case "last_seq":
		return fLastSeq
	case "events":
		return fEvents
	case "format":
		return fFormat
	case "destination":
		return fDestination
	case "problems":
		return fProblems
	case "head_hash":
		return fHeadHash
	case "file":
		return fFile
	case "locks":
		return fLocks
	case "rows_changed":
		return fRowsChanged
	case "files_changed":
		return fFilesChanged
	case "mode":
		return fMode
	case "limit":
		return fLimit
	}
	return -1
}

func bits(fs ...int) uint64 {
	var m uint64
	for _, f := range fs {
		m |= 1 << uint(f)
	}
	return m
}

var (
	// envelope.json: its required nine, lock_name (which every lock
	// event's schema requires and the ledger-wide ones refuse), and uid and
	// user (both or neither: events written before they were recorded have
	// neither).
	envelopeRequired = bits(fEventID, fSeq, fType, fSchemaVersion, fAt, fRequestID, fActor, fHostID, fPID)
	osUserFields     = bits(fUID, fUser)
	ledgerFields     = envelopeRequired | osUserFields
	envelopeFields   = ledgerFields | bits(fLockName)
	lockRequired     = envelopeRequired | bits(fLockName)
	// defs.json#/$defs/acquired
	acquiredRequired = bits(fTTLSeconds, fIntent, fIntentVersion, fFencingToken, fMetadata, fPIDStart, fBootID)
	acquiredFields   = acquiredRequired | bits(fTargets, fMode, fLimit)

	// The properties each event schema evaluates (unevaluatedProperties:
	// false refuses every other one) and the ones it requires.
	eventAllowed = [...]uint64{
		kAcquired:  envelopeFields | acquiredFields | bits(fNote),
		kHeartbeat: envelopeFields,
		kStolen:    envelopeFields | acquiredFields | bits(fPreviousLock, fPreviousLockHash, fReason, fNote),
		kReleased: envelopeFields | bits(fHeldDurationSeconds, fResult, fFailureStep, fExitCode, fForced,
			fReleasedRequestID, fFencingToken, fSupersededBy, fSupersededByFormat, fSupersededByPath, fNote),
		kHeartbeatFailed: envelopeFields | bits(fConsecutiveFailures, fError, fLockLost),
		kBlocked:         envelopeFields | bits(fHeldBy, fState, fWaitedSeconds, fForeign, fMode, fLimit),
		kRefused:         envelopeFields | bits(fAction, fError, fState, fHeldBy),
		kProjected:       envelopeFields | bits(fChanges, fMovedAside, fBrokenChainAccepted, fFirstBadSeq),
		kJobProcesses:    envelopeFields | bits(fJobRequestID, fPIDs, fAction, fNote),
		kExported:        ledgerFields | bits(fSince, fUntil, fFirstSeq, fLastSeq, fEvents, fFormat, fDestination),
		kVerified: ledgerFields | bits(fResult, fEvents, fProblems, fFirstBadSeq, fFirstSeq, fLastSeq, fHeadHash,
			fFile),
		kLedgerProjected: ledgerFields | bits(fResult, fEvents, fLocks, fRowsChanged, fFilesChanged, fProblems,
			fBrokenChainAccepted, fFirstBadSeq),
	}
	eventRequired = [...]uint64{
		kAcquired:        lockRequired | acquiredRequired,
		kHeartbeat:       lockRequired,
		kStolen:          lockRequired | acquiredRequired | bits(fPreviousLock, fPreviousLockHash, fReason),
		kReleased:        lockRequired | bits(fHeldDurationSeconds, fResult, fForced),
		kHeartbeatFailed: lockRequired | bits(fConsecutiveFailures, fError, fLockLost),
		kBlocked:         lockRequired | bits(fHeldBy, fState, fWaitedSeconds),
		kRefused:         lockRequired | bits(fAction, fError),
		kProjected:       lockRequired | bits(fChanges),
		kJobProcesses:    lockRequired | bits(fJobRequestID, fPIDs, fAction),
		kExported:        envelopeRequired | bits(fEvents, fFormat, fDestination),
		kVerified:        envelopeRequired | bits(fResult, fEvents, fProblems),
		kLedgerProjected: envelopeRequired | bits(fResult, fEvents, fLocks, fRowsChanged, fFilesChanged),
	}
)

var eventSchema = recordSchema{id: rEvent, names: eventNames, extra: "unevaluatedProperties", together: osUserFields}

var (
	eventTypes = []string{"lock_acquired", "lock_heartbeat", "lock_stolen", "lock_released", "heartbeat_failed", "acquire_blocked",
		"action_refused", "lock_projected", "job_processes", "ledger_exported", "ledger_verified", "ledger_projected"}
	stealReasons   = []string{"stale_lock_forced", "holder_dead", "forced_active", "foreign_lock", "superseded", "reclaimed"}
	results        = []string{"success", "failure", "cancelled"}
	blockStates    = []string{"held", "stale", "dead"}
	refusedStates  = []string{"free", "held", "stale", "dead"}
	refusedActions = []string{"release", "steal", "heartbeat"}
	jobActions     = []string{"terminated", "killed", "left_running"}
	verifyResults  = []string{"ok", "failed"}
	projectResults = []string{"ok", "refused"}
	exportFormats  = []string{"jsonl", "csv"}
	holderModes    = []string{"exclusive", "shared"}
	targetFmts     = []string{"tower-fleet", "bso", "beads", "prodigy", "gitclaw"}
)

// MaxLimit is the largest number of slots a semaphore may have (defs.json's limit).
const MaxLimit = 1000000

// The array bounds of lock_projected's changes and job_processes's pids.
const (
	maxChanges    = 64
	maxChangeLen  = 1024
	maxJobPIDs    = 4096
	maxPathLength = 4096
)

const noMax = math.MaxInt64

// maxUID is the largest user id (uid_t is 32 bits).
const maxUID = math.MaxUint32

func checkEventField(v *validator, f int) *verr {
	switch f {
	// envelope.json
	case fEventID:
		return v.pattern(isEventID, "^[0-9A-HJKMNP-TV-Z]{26}$")
	case fSeq:
		return v.integer(1, noMax)
	case fType:
		// envelope: enum of every type; the type's own file: const.
		return v.typeConst(v.t)
	case fSchemaVersion:
		return v.constOne()
	case fAt:
		return v.pattern(isEventTime, `^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{9}Z$`)
	case fLockName:
		return v.pattern(isLockName, "^[a-z0-9]([a-z0-9_-]{0,126}[a-z0-9])?$")
	case fRequestID:
		return v.pattern(isRequestID, "^[A-Za-z0-9_.:-]{1,128}$")
	case fActor, fHostID:
		return v.str(1, 256)
	case fPID:
		return v.integer(0, noMax)
	case fUID:
		return v.integer(0, maxUID)
	case fUser:
		return v.str(0, 256)
	// defs.json#/$defs/acquired
	case fTTLSeconds, fFencingToken:
		return v.integer(1, noMax)
	case fIntent, fIntentVersion:
		return v.str(0, 256)
	case fMetadata:
		return v.stringMap()
	case fPIDStart, fBootID:
		return v.str(0, 64)
	case fTargets:
		return v.targets()
	case fMode:
		return v.enum(holderModes)
	case fLimit:
		return v.integer(1, MaxLimit)
	// lock_stolen.json
	case fPreviousLock:
		return v.record(&previousLockSchema, lockFileAll, lockFileRequired)
	case fPreviousLockHash:
		return v.pattern(isSHA256Ref, "^sha256:[0-9a-f]{64}$")
	case fReason:
		return v.enum(stealReasons)
	case fNote:
		return v.str(0, 1024)
	// lock_released.json
	case fHeldDurationSeconds:
		return v.number(0)
	case fResult:
		switch v.k {
		case kVerified:
			return v.enum(verifyResults)
		case kLedgerProjected:
			return v.enum(projectResults)
		}
		return v.enum(results)
	case fFailureStep:
		return v.str(1, 256)
	case fExitCode:
		return v.integer(0, 255)
	case fForced, fLockLost, fForeign, fBrokenChainAccepted:
		return v.boolean()
	case fReleasedRequestID:
		return v.str(1, noMax)
	case fSupersededBy:
		return v.record(&holderSchema, holderAll, holderRequired)
	case fSupersededByFormat:
		return v.enum(targetFmts)
	case fSupersededByPath:
		return v.absPath(2, maxPathLength)
	// heartbeat_failed.json (error also action_refused.json)
	case fConsecutiveFailures:
		return v.integer(1, noMax)
	case fError:
		return v.str(1, 4096)
	// acquire_blocked.json (held_by and state also action_refused.json)
	case fHeldBy:
		return v.record(&holderSchema, holderAll, holderRequired)
	case fState:
		if v.k == kRefused {
			return v.enum(refusedStates)
		}
		return v.enum(blockStates)
	case fWaitedSeconds:
		return v.number(0)
	// action_refused.json, job_processes.json
	case fAction:
		if v.k == kRefused {
			return v.enum(refusedActions)
		}
		return v.enum(jobActions)
	// lock_projected.json
	case fChanges:
		return v.array(1, maxChanges, itemChange)
	case fMovedAside:
		return v.absPath(0, maxPathLength)
	case fFirstBadSeq:
		return v.integer(1, noMax)
	// job_processes.json (note as lock_stolen.json's)
	case fJobRequestID:
		return v.pattern(isRequestID, "^[A-Za-z0-9_.:-]{1,128}$")
	case fPIDs:
		return v.array(1, maxJobPIDs, itemPID)
	// ledger_exported.json, ledger_verified.json, ledger_projected.json
	case fSince, fUntil:
		return v.pattern(isEventTime, `^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{9}Z$`)
	case fFirstSeq, fLastSeq:
		return v.integer(1, noMax)
	case fEvents, fProblems, fLocks, fRowsChanged, fFilesChanged:
		return v.integer(0, noMax)
	case fFormat:
		return v.enum(exportFormats)
	case fDestination:
		return v.destination()
	case fHeadHash:
		return v.pattern(isHexHash, "^[0-9a-f]{64}$")
	case fFile:
		return v.absPath(2, maxPathLength)
	}
	panic("schema: fast: unhandled event field " + strconv.Itoa(f))
}

// ---------------------------------------------------------------------
// lock_v1.json: the lock file, also lock_stolen's previous_lock.

const (
	lLockVersion = iota
	lLockName
	lRequestID
	lActor
	lIntent
	lIntentVersion
	lHostID
	lPID
	lCreatedAt
	lLastHeartbeatAt
	lTTLSeconds
	lMetadata
	nLockFields
)

var lockFileNames = []string{
	lLockVersion: "lock_version", lLockName: "lock_name", lRequestID: "request_id", lActor: "actor",
	lIntent: "intent", lIntentVersion: "intent_version", lHostID: "host_id", lPID: "pid",
	lCreatedAt: "created_at", lLastHeartbeatAt: "last_heartbeat_at", lTTLSeconds: "ttl_seconds", lMetadata: "metadata",
}

func lockFileLookup(k []byte) int {
	switch string(k) {
	case "lock_version":
		return lLockVersion
	case "lock_name":
		return lLockName
	case "request_id":
		return lRequestID
	case "actor":
		return lActor
	case "intent":
		return lIntent
	case "intent_version":
		return lIntentVersion
	case "host_id":
		return lHostID
	case "pid":
		return lPID
	case "created_at":
		return lCreatedAt
	case "last_heartbeat_at":
		return lLastHeartbeatAt
	case "ttl_seconds":
		return lTTLSeconds
	case "metadata":
		return lMetadata
	}
	return -1
}

var (
	lockFileAll      = uint64(1)<<nLockFields - 1
	lockFileRequired = lockFileAll &^ bits(lMetadata)
	lockFileSchema   = recordSchema{id: rLockFile, names: lockFileNames, extra: "additionalProperties"}
	// lock_stolen.json adds metadata's string values to lock_v1.json.
	previousLockSchema = recordSchema{id: rPreviousLock, names: lockFileNames, extra: "additionalProperties"}
)

func checkLockFileField(v *validator, f int, stringMeta bool) *verr {
	switch f {
	case lLockVersion:
		return v.constString("v1")
	case lLockName:
		return v.pattern(isLockName, "^[a-z0-9]([a-z0-9_-]{0,126}[a-z0-9])?$")
	case lRequestID:
		return v.str(1, 256)
	case lActor, lIntent, lIntentVersion, lHostID:
		return v.str(0, noMax)
	case lPID:
		return v.integer(0, noMax)
	case lCreatedAt, lLastHeartbeatAt:
		return v.dateTime()
	case lTTLSeconds:
		return v.integer(1, noMax)
	case lMetadata:
		if stringMeta {
			return v.stringMap()
		}
		return v.anyObject()
	}
	panic("schema: fast: unhandled lock file field " + strconv.Itoa(f))
}

// ---------------------------------------------------------------------
// defs.json#/$defs/holder: acquire_blocked's held_by.

const (
	hRequestID = iota
	hActor
	hIntent
	hHostID
	hPID
	hCreatedAt
	hLastHeartbeatAt
	nHolderFields
)

var holderNames = []string{
	hRequestID: "request_id", hActor: "actor", hIntent: "intent", hHostID: "host_id", hPID: "pid",
	hCreatedAt: "created_at", hLastHeartbeatAt: "last_heartbeat_at",
}

func holderLookup(k []byte) int {
	switch string(k) {
	case "request_id":
		return hRequestID
	case "actor":
		return hActor
	case "intent":
		return hIntent
	case "host_id":
		return hHostID
	case "pid":
		return hPID
	case "created_at":
		return hCreatedAt
	case "last_heartbeat_at":
		return hLastHeartbeatAt
	}
	return -1
}

var (
	holderAll      = uint64(1)<<nHolderFields - 1
	holderRequired = holderAll &^ bits(hIntent)
	holderSchema   = recordSchema{id: rHolder, names: holderNames, extra: "additionalProperties"}
)

func checkHolderField(v *validator, f int) *verr {
	switch f {
	case hRequestID:
		return v.str(1, noMax)
	case hActor, hIntent, hHostID, hCreatedAt, hLastHeartbeatAt:
		return v.str(0, noMax)
	case hPID:
		return v.integer(math.MinInt64, noMax) // "integer", no bound
	}
	panic("schema: fast: unhandled holder field " + strconv.Itoa(f))
}

// ---------------------------------------------------------------------
// defs.json#/$defs/acquired's targets items.

const (
	tFormat = iota
	tPath
	nTargetFields
)

var targetNames = []string{tFormat: "format", tPath: "path"}

func targetLookup(k []byte) int {
	switch string(k) {
	case "format":
		return tFormat
	case "path":
		return tPath
	}
	return -1
}

var (
	targetAll    = uint64(1)<<nTargetFields - 1
	targetSchema = recordSchema{id: rTarget, names: targetNames, extra: "additionalProperties"}
)

const maxTargets = 16

func checkTargetField(v *validator, f int) *verr {
	switch f {
	case tFormat:
		return v.enum(targetFmts)
	case tPath:
		return v.absPath(2, maxPathLength)
	}
	panic("schema: fast: unhandled target field " + strconv.Itoa(f))
}

// targets: {"type": "array", "maxItems": 16, "items": target}.
func (v *validator) targets() *verr {
	s := &v.s
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '[' {
		return typeErr("array", s.value())
	}
	var first *verr
	n := 0
	more := s.openArray()
	for more && s.err == "" {
		if e := v.record(&targetSchema, targetAll, targetAll); e != nil && first == nil {
			first = e.under(strconv.Itoa(n))
		}
		n++
		more = s.nextElement()
	}
	s.closeArray()
	if first != nil {
		return first
	}
	if n > maxTargets {
		return &verr{rule: "maxItems", msg: "maximum " + strconv.Itoa(maxTargets) + " items required, but found " + strconv.Itoa(n) + " items"}
	}
	return nil
}

// itemKind is the items schema of an array of scalars. (A kind, not a
// function value: v would escape through an indirect call.)
type itemKind uint8

const (
	itemChange itemKind = iota // lock_projected's changes: {"type": "string", "minLength": 1, "maxLength": 1024}
	itemPID                    // job_processes's pids: {"type": "integer", "format": "int64", "minimum": 1}
)

func (v *validator) item(k itemKind) *verr {
	if k == itemChange {
		return v.str(1, maxChangeLen)
	}
	return v.integer(1, noMax)
}

// array: {"type": "array", "minItems": min, "maxItems": max, "items": item}.
func (v *validator) array(min, max int, item itemKind) *verr {
	s := &v.s
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '[' {
		return typeErr("array", s.value())
	}
	var first *verr
	n := 0
	more := s.openArray()
	for more && s.err == "" {
		if e := v.item(item); e != nil && first == nil {
			first = e.under(strconv.Itoa(n))
		}
		n++
		more = s.nextElement()
	}
	s.closeArray()
	if s.err != "" {
		return nil
	}
	if first != nil {
		return first
	}
	if n < min {
		return &verr{rule: "minItems", msg: "minimum " + strconv.Itoa(min) + " items required, but found " + strconv.Itoa(n) + " items"}
	}
	if n > max {
		return &verr{rule: "maxItems", msg: "maximum " + strconv.Itoa(max) + " items required, but found " + strconv.Itoa(n) + " items"}
	}
	return nil
}

// absPath: {"type": "string", "minLength": min, "maxLength": max, "pattern": "^/"}
// (min 0 when the schema has no minLength: the pattern needs one rune anyway).
func (v *validator) absPath(min, max int) *verr {
	d, plain, jk := v.stringContent()
	if jk != jString {
		return typeErr("string", jk)
	}
	if e := lengthErr(d, plain, min, max); e != nil {
		return e
	}
	if len(d) == 0 || d[0] != '/' {
		return patternErr("^/")
	}
	return nil
}

// destination: {"anyOf": [{"const": "stdout"}, {"type": "string",
// "minLength": 2, "maxLength": 4096, "pattern": "^/"}]}.
func (v *validator) destination() *verr {
	d, plain, jk := v.stringContent()
	switch {
	case jk == jInvalid:
		return nil // syntax error, reported by the scanner
	case jk != jString:
		return &verr{rule: "anyOf", msg: "expected \"stdout\" or an absolute path, but got " + jk.String()}
	case string(d) == events.DestinationStdout:
		return nil
	}
	if e := lengthErr(d, plain, 2, maxPathLength); e != nil {
		return &verr{rule: "anyOf", msg: "not \"stdout\", and " + e.rule + ": " + e.msg}
	}
	if d[0] != '/' {
		return &verr{rule: "anyOf", msg: "neither \"stdout\" nor an absolute path"}
	}
	return nil
}

// ---------------------------------------------------------------------
// Value rules

func typeErr(want string, got jkind) *verr {
	return &verr{rule: "type", msg: "expected " + want + ", but got " + got.String()}
}

func patternErr(pat string) *verr {
	return &verr{rule: "pattern", msg: "does not match pattern " + strconv.Quote(pat)}
}

// stringContent consumes a value; for a string it returns the decoded
// content (the raw bytes when plain: no escapes, ASCII only).
func (v *validator) stringContent() (d []byte, plain bool, jk jkind) {
	s := &v.s
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false, s.value()
	}
	start, end, plain := s.str()
	if s.err != "" {
		return nil, false, jInvalid
	}
	if plain {
		return s.b[start:end], true, jString
	}
	return s.decode(start, end), false, jString
}

// lengthErr applies minLength/maxLength (runes of the decoded string).
func lengthErr(d []byte, plain bool, min, max int) *verr {
	n := len(d)
	if !plain {
		n = utf8.RuneCount(d)
	}
	if n < min {
		return &verr{rule: "minLength", msg: "length must be >= " + strconv.Itoa(min) + ", but got " + strconv.Itoa(n)}
	}
	if n > max {
		return &verr{rule: "maxLength", msg: "length must be <= " + strconv.Itoa(max) + ", but got " + strconv.Itoa(n)}
	}
	return nil
}

// str: {"type": "string"} with minLength min and maxLength max (0 and
// noMax when absent).
func (v *validator) str(min, max int) *verr {
	if min == 0 && max == noMax {
		// Only the type: no need to decode.
		s := &v.s
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == '"' {
			s.str()
			return nil
		}
		return typeErr("string", s.value())
	}
	d, plain, jk := v.stringContent()
	if jk != jString {
		return typeErr("string", jk)
	}
	return lengthErr(d, plain, min, max)
}

// pattern: {"type": "string", "pattern": pat}; match is pat by hand.
func (v *validator) pattern(match func([]byte) bool, pat string) *verr {
	d, _, jk := v.stringContent()
	if jk != jString {
		return typeErr("string", jk)
	}
	if !match(d) {
		return patternErr(pat)
	}
	return nil
}

// enum of strings, without a type: any other value is refused by enum.
func (v *validator) enum(vals []string) *verr {
	d, _, jk := v.stringContent()
	if jk == jString {
		for _, x := range vals {
			if string(d) == x {
				return nil
			}
		}
	}
	if jk == jInvalid {
		return nil // syntax error, reported by the scanner
	}
	return &verr{rule: "enum", msg: "value must be one of " + quoteAll(vals)}
}

func quoteAll(vals []string) string {
	q := make([]string, len(vals))
	for i, x := range vals {
		q[i] = strconv.Quote(x)
	}
	return strings.Join(q, ", ")
}

// constString: {"const": c} for a string c.
func (v *validator) constString(c string) *verr {
	d, _, jk := v.stringContent()
	if jk == jInvalid || jk == jString && string(d) == c {
		return nil
	}
	return &verr{rule: "const", msg: "value must be " + strconv.Quote(c)}
}

// typeConst is the envelope's "type": its enum of every event type and
// the type file's const (t itself).
func (v *validator) typeConst(t string) *verr {
	d, _, jk := v.stringContent()
	if jk == jInvalid || jk == jString && string(d) == t {
		return nil
	}
	for _, x := range eventTypes {
		if jk == jString && string(d) == x {
			return &verr{rule: "const", msg: "value must be " + strconv.Quote(t)}
		}
	}
	return &verr{rule: "enum", msg: "value must be one of " + quoteAll(eventTypes)}
}

// dateTime: {"type": "string", "format": "date-time"} (the library
// asserts formats; datetime.go is its check).
func (v *validator) dateTime() *verr {
	d, _, jk := v.stringContent()
	if jk != jString {
		return typeErr("string", jk)
	}
	if !isDateTime(d) {
		return &verr{rule: "format", msg: strconv.Quote(string(d)) + " is not valid \"date-time\""}
	}
	return nil
}

func (v *validator) boolean() *verr {
	s := &v.s
	s.ws()
	if jk := s.value(); jk != jBoolean && jk != jInvalid {
		return typeErr("boolean", jk)
	}
	return nil
}

// anyObject: {"type": "object"}.
func (v *validator) anyObject() *verr {
	s := &v.s
	s.ws()
	if jk := s.value(); jk != jObject && jk != jInvalid {
		return typeErr("object", jk)
	}
	return nil
}

// stringMap: {"type": "object", "additionalProperties": {"type": "string"}}.
// The last of duplicate keys counts, so a non-string value is forgiven
// by a later string value under the same (decoded) key.
func (v *validator) stringMap() *verr {
	s := &v.s
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return typeErr("object", s.value())
	}
	var bad map[string]jkind // decoded keys whose last value is not a string
	more := s.openObject()
	for more && s.err == "" {
		ks, ke, plain := s.key()
		if s.err != "" {
			break
		}
		var jk jkind
		if s.i < len(s.b) && s.b[s.i] == '"' {
			s.str()
			jk = jString
		} else {
			jk = s.value()
		}
		if jk != jString || bad != nil {
			k := string(s.b[ks:ke])
			if !plain {
				k = string(s.decode(ks, ke))
			}
			if jk != jString {
				if bad == nil {
					bad = map[string]jkind{}
				}
				bad[k] = jk
			} else {
				delete(bad, k)
			}
		}
		more = s.nextMember()
	}
	s.closeObject()
	if s.err != "" || len(bad) == 0 {
		return nil
	}
	keys := make([]string, 0, len(bad))
	for k := range bad {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return typeErr("string", bad[keys[0]]).under(keys[0])
}

// integer: {"type": "integer", "format": "int64"} with minimum min and
// maximum max.
func (v *validator) integer(min, max int64) *verr {
	s := &v.s
	s.ws()
	if s.i >= len(s.b) || !isNumberStart(s.b[s.i]) {
		return typeErr("integer", s.value())
	}
	raw := s.num()
	if s.err != "" {
		return nil
	}
	if x, ok := smallInt(raw); ok {
		if x < min || x > max {
			return numFacts{ok: true, sign: cmpInt(x, 0), ip: max64(x, -x)}.bounds(raw, min, max)
		}
		return nil
	}
	n := analyzeNumber(raw)
	if !n.ok {
		return bigErr(raw)
	}
	if !n.isInt() {
		return &verr{rule: "type", msg: "expected integer, but got number"}
	}
	if _, err := strconv.ParseInt(string(raw), 10, 64); err != nil {
		return formatErr(raw, "int64", Int64Rule)
	}
	return n.bounds(raw, min, max)
}

func formatErr(raw []byte, format, rule string) *verr {
	return &verr{rule: "format", msg: showNumber(raw) + " is not valid " + strconv.Quote(format) + ": " + rule}
}

func showNumber(raw []byte) string {
	if len(raw) > 40 {
		return string(raw[:37]) + "..."
	}
	return string(raw)
}

// fitsFloat64: strconv.ParseFloat takes the number. Without an exponent,
// fewer than 309 digits are always below math.MaxFloat64.
func fitsFloat64(raw []byte) bool {
	if len(raw) < 309 && bytes.IndexAny(raw, "eE") < 0 {
		return true
	}
	_, err := strconv.ParseFloat(string(raw), 64)
	return err == nil
}

// smallInt: a number of at most 17 digits, no fraction and no exponent,
// is the integer it spells (the common case, without analyzeNumber).
func smallInt(raw []byte) (int64, bool) {
	d := raw
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 17 {
		return 0, false
	}
	var x int64
	for _, c := range d {
		if !isDigit(c) {
			return 0, false
		}
		x = x*10 + int64(c-'0')
	}
	if raw[0] == '-' {
		x = -x
	}
	return x, true
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// number: {"type": "number", "format": "float64", "minimum": min}.
func (v *validator) number(min int64) *verr {
	s := &v.s
	s.ws()
	if s.i >= len(s.b) || !isNumberStart(s.b[s.i]) {
		return typeErr("number", s.value())
	}
	raw := s.num()
	if s.err != "" {
		return nil
	}
	n := analyzeNumber(raw)
	if !n.ok {
		return bigErr(raw)
	}
	if !fitsFloat64(raw) {
		return formatErr(raw, "float64", Float64Rule)
	}
	return n.bounds(raw, min, noMax)
}

// constOne: {"const": 1, "format": "int64"}: const compares as numbers (1.0
// and 1e0 are 1), the format then takes only 1 itself.
func (v *validator) constOne() *verr {
	s := &v.s
	s.ws()
	if s.i >= len(s.b) || !isNumberStart(s.b[s.i]) {
		if jk := s.value(); jk == jInvalid {
			return nil
		}
		return &verr{rule: "const", msg: "value must be 1"}
	}
	raw := s.num()
	if s.err != "" {
		return nil
	}
	n := analyzeNumber(raw)
	if !n.ok {
		return bigErr(raw)
	}
	if n.cmp(1) != 0 {
		return &verr{rule: "const", msg: "value must be 1"}
	}
	if string(raw) != "1" {
		return formatErr(raw, "int64", Int64Rule)
	}
	return nil
}

func bigErr(raw []byte) *verr {
	return &verr{rule: "type", msg: "number " + showNumber(raw) + " has an exponent out of range"}
}

func (n numFacts) bounds(raw []byte, min, max int64) *verr {
	if min != math.MinInt64 && n.cmp(min) < 0 {
		return &verr{rule: "minimum", msg: "must be >= " + strconv.FormatInt(min, 10) + " but found " + string(raw)}
	}
	if max != noMax && n.cmp(max) > 0 {
		return &verr{rule: "maximum", msg: "must be <= " + strconv.FormatInt(max, 10) + " but found " + string(raw)}
	}
	return nil
}

// ---------------------------------------------------------------------
// Exact decimal facts about a JSON number, as math/big sees it.

type numFacts struct {
	// ok: big.Rat.SetString accepts the number. It refuses an exponent that
	// does not fit in int64, and (for a non-zero number) a power of ten
	// beyond ±10^6 once the fraction digits are counted; the library then
	// panics on a nil *big.Rat (which reference.Validate reports as a refusal).
	ok   bool
	sign int // -1, 0, 1
	// ip is the integer part of |value| when it is at most ipLimit; big
	// is set when it is larger.
	ip   int64
	big  bool
	frac bool // the fractional part is not zero
}

const ipLimit = 1e17

func (n numFacts) isInt() bool { return n.sign == 0 || !n.frac }

// cmp compares the value with k, |k| <= ipLimit.
func (n numFacts) cmp(k int64) int {
	switch {
	case n.sign == 0:
		return cmpInt(0, k)
	case n.sign < 0:
		if k >= 0 {
			return -1
		}
		// k < 0: compare -(ip.frac) with k, i.e. ip.frac with -k.
		if n.big {
			return -1
		}
		c := cmpInt(n.ip, -k)
		if c == 0 && n.frac {
			c = 1
		}
		return -c
	default:
		if k < 0 || n.big {
			return 1
		}
		c := cmpInt(n.ip, k)
		if c == 0 && n.frac {
			c = 1
		}
		return c
	}
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// analyzeNumber reads a number that the scanner accepted (JSON grammar).
func analyzeNumber(raw []byte) numFacts {
	var n numFacts
	i := 0
	neg := false
	if raw[0] == '-' {
		neg = true
		i++
	}
	is := i
	for i < len(raw) && isDigit(raw[i]) {
		i++
	}
	intDigits := raw[is:i]
	var fracDigits []byte
	if i < len(raw) && raw[i] == '.' {
		i++
		fs := i
		for i < len(raw) && isDigit(raw[i]) {
			i++
		}
		fracDigits = raw[fs:i]
	}
	var exp int64
	if i < len(raw) { // 'e' or 'E'
		i++
		eneg := false
		if raw[i] == '+' {
			i++
		} else if raw[i] == '-' {
			eneg = true
			i++
		}
		limit := uint64(math.MaxInt64)
		if eneg {
			limit++
		}
		var mag uint64
		for ; i < len(raw); i++ {
			d := uint64(raw[i] - '0')
			if mag > (limit-d)/10 {
				return n // strconv.ParseInt overflows: not ok
			}
			mag = mag*10 + d
		}
		if eneg {
			exp = int64(-mag) // -(1<<63) wraps to itself, as intended
		} else {
			exp = int64(mag)
		}
	}
	digit := func(k int) byte {
		if k < len(intDigits) {
			return intDigits[k]
		}
		return fracDigits[k-len(intDigits)]
	}
	nd := len(intDigits) + len(fracDigits)
	zero := true
	for k := 0; k < nd; k++ {
		if digit(k) != '0' {
			zero = false
			break
		}
	}
	n.ok = true
	if zero {
		return n // sign 0: an integer, whatever the exponent
	}
	// math/big's exp5: the exponent less the fraction digits.
	fc := int64(len(fracDigits))
	if exp > 1e6+fc || exp < fc-1e6 {
		n.ok = false
		return n
	}
	n.sign = 1
	if neg {
		n.sign = -1
	}
	// The decimal point sits after digit p of intDigits++fracDigits.
	p := int64(len(intDigits)) + exp
	for k := int64(0); k < p; k++ {
		if k >= int64(nd) {
			if n.ip == 0 {
				break
			}
			n.ip *= 10
		} else {
			n.ip = n.ip*10 + int64(digit(int(k))-'0')
		}
		if n.ip > ipLimit {
			n.big = true
			break
		}
	}
	for k := max(p, 0); k < int64(nd); k++ {
		if digit(int(k)) != '0' {
			n.frac = true
			break
		}
	}
	return n
}

// ---------------------------------------------------------------------
// Patterns, by hand. TestFastPatterns checks each against the regexp.

func isDigit(c byte) bool       { return c >= '0' && c <= '9' }
func isNumberStart(c byte) bool { return c == '-' || isDigit(c) }

// ^[0-9A-HJKMNP-TV-Z]{26}$
func isEventID(b []byte) bool {
	if len(b) != 26 {
		return false
	}
	for _, c := range b {
		if !ulidChar[c] {
			return false
		}
	}
	return true
}

var ulidChar = func() (t [256]bool) {
	for _, c := range []byte("0123456789ABCDEFGHJKMNPQRSTVWXYZ") {
		t[c] = true
	}
	return t
}()

// ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{9}Z$
func isEventTime(b []byte) bool {
	const tmpl = "dddd-dd-ddTdd:dd:dd.dddddddddZ"
	if len(b) != len(tmpl) {
		return false
	}
	for i := 0; i < len(tmpl); i++ {
		if tmpl[i] == 'd' {
			if !isDigit(b[i]) {
				return false
			}
		} else if b[i] != tmpl[i] {
			return false
		}
	}
	return true
}

// ^[a-z0-9]([a-z0-9_-]{0,126}[a-z0-9])?$
func isLockName(b []byte) bool {
	if len(b) < 1 || len(b) > 128 || !lowerAlnum(b[0]) || !lowerAlnum(b[len(b)-1]) {
		return false
	}
	for i := 1; i < len(b)-1; i++ {
		if c := b[i]; !lowerAlnum(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func lowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || isDigit(c) }

// ^[A-Za-z0-9_.:-]{1,128}$
func isRequestID(b []byte) bool {
	if len(b) < 1 || len(b) > 128 {
		return false
	}
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigit(c) || c == '_' || c == '.' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

// ^sha256:[0-9a-f]{64}$
func isSHA256Ref(b []byte) bool {
	const prefix = "sha256:"
	if len(b) != len(prefix)+64 || string(b[:len(prefix)]) != prefix {
		return false
	}
	for _, c := range b[len(prefix):] {
		if !isDigit(c) && !(c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// isHexHash is ^[0-9a-f]{64}$: a chain hash.
func isHexHash(b []byte) bool {
	if len(b) != 64 {
		return false
	}
	for _, c := range b {
		if !isDigit(c) && !(c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// ---------------------------------------------------------------------
// The scanner: encoding/json's grammar, without building values.

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

type jkind uint8

const (
	jInvalid jkind = iota // a syntax error (in scanner.err)
	jNull
	jBoolean
	jNumber
	jString
	jArray
	jObject
)

func (k jkind) String() string {
	switch k {
	case jNull:
		return "null"
	case jBoolean:
		return "boolean"
	case jNumber:
		return "number"
	case jString:
		return "string"
	case jArray:
		return "array"
	case jObject:
		return "object"
	}
	return "invalid JSON"
}

type scanner struct {
	b     []byte
	i     int
	depth int
	err   string // the first syntax error; once set, everything stops
}

func (s *scanner) fail(msg string) {
	if s.err == "" {
		s.err = msg + " at offset " + strconv.Itoa(s.i)
	}
	s.i = len(s.b)
}

func (s *scanner) syntaxErr() *verr { return &verr{msg: "not JSON: " + s.err} }

func (s *scanner) ws() {
	if s.i < len(s.b) && s.b[s.i] > ' ' {
		return // the common case: no white space
	}
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value consumes any value (white space before it skipped) and returns
// its kind, jInvalid after a syntax error.
func (s *scanner) value() jkind {
	s.ws()
	if s.i >= len(s.b) {
		s.fail("unexpected end of JSON input")
		return jInvalid
	}
	var k jkind
	switch c := s.b[s.i]; {
	case c == '"':
		s.str()
		k = jString
	case c == '{':
		more := s.openObject()
		for more && s.err == "" {
			s.key()
			if s.err != "" {
				break
			}
			s.value()
			more = s.nextMember()
		}
		s.closeObject()
		k = jObject
	case c == '[':
		more := s.openArray()
		for more && s.err == "" {
			s.value()
			more = s.nextElement()
		}
		s.closeArray()
		k = jArray
	case c == 't':
		s.literal("true")
		k = jBoolean
	case c == 'f':
		s.literal("false")
		k = jBoolean
	case c == 'n':
		s.literal("null")
		k = jNull
	case isNumberStart(c):
		s.num()
		k = jNumber
	default:
		s.fail("invalid character " + strconv.QuoteRune(rune(c)) + " looking for beginning of value")
	}
	if s.err != "" {
		return jInvalid
	}
	return k
}

func (s *scanner) literal(w string) {
	if len(s.b)-s.i >= len(w) && string(s.b[s.i:s.i+len(w)]) == w {
		s.i += len(w)
		return
	}
	s.fail("invalid literal")
}

// openObject consumes '{' and reports whether a member follows (else it
// consumed the '}' too).
func (s *scanner) openObject() bool {
	s.i++
	s.depth++
	if s.depth > maxDepth {
		s.fail("exceeded max depth")
		return false
	}
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return false
	}
	return true
}

func (s *scanner) closeObject() { s.depth-- }

// key consumes a member's name and its colon; start:end is the name's raw
// content.
func (s *scanner) key() (start, end int, plain bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		s.fail("looking for beginning of object key string")
		return 0, 0, false
	}
	start, end, plain = s.str()
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != ':' {
		s.fail("after object key")
		return 0, 0, false
	}
	s.i++
	s.ws()
	return start, end, plain
}

// nextMember consumes ',' (true: a member follows) or '}' (false).
func (s *scanner) nextMember() bool {
	s.ws()
	if s.i < len(s.b) {
		switch s.b[s.i] {
		case ',':
			s.i++
			s.ws()
			return true
		case '}':
			s.i++
			return false
		}
	}
	s.fail("after object key:value pair")
	return false
}

func (s *scanner) openArray() bool {
	s.i++
	s.depth++
	if s.depth > maxDepth {
		s.fail("exceeded max depth")
		return false
	}
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return false
	}
	return true
}

func (s *scanner) closeArray() { s.depth-- }

func (s *scanner) nextElement() bool {
	s.ws()
	if s.i < len(s.b) {
		switch s.b[s.i] {
		case ',':
			s.i++
			return true
		case ']':
			s.i++
			return false
		}
	}
	s.fail("after array element")
	return false
}

// strPlain: bytes that may appear in a string without ending it, being
// escaped, or making it non-ASCII.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str consumes a string; start:end is its raw content. plain: no escapes
// and ASCII only, so the content is the decoded string.
func (s *scanner) str() (start, end int, plain bool) {
	b := s.b
	start = s.i + 1
	i := start
	plain = true
	for {
		// Eight bytes at a time while none may need attention.
		for i+8 <= len(b) && !mayBeSpecial(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		for i < len(b) && strPlain[b[i]] {
			i++
		}
		if i >= len(b) {
			s.i = i
			s.fail("unexpected end of JSON input")
			return start, start, false
		}
		switch c := b[i]; {
		case c == '"':
			s.i = i + 1
			return start, i, plain
		case c == '\\':
			plain = false
			i++
			if i >= len(b) {
				s.i = i
				s.fail("unexpected end of JSON input")
				return start, start, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				i++
				for j := 0; j < 4; j++ {
					if i >= len(b) {
						s.i = i
						s.fail("unexpected end of JSON input")
						return start, start, false
					}
					if !isHex(b[i]) {
						s.i = i
						s.fail("invalid character in \\u hexadecimal character escape")
						return start, start, false
					}
					i++
				}
			default:
				s.i = i
				s.fail("invalid character in string escape code")
				return start, start, false
			}
		case c < 0x20:
			s.i = i
			s.fail("invalid character in string literal")
			return start, start, false
		default: // >= 0x80: UTF-8, valid or not (read as U+FFFD)
			plain = false
			i++
		}
	}
}

// mayBeSpecial reports whether any of the eight bytes of w may be '"',
// '\\', a control character or non-ASCII. It never misses one; it may
// report one that is not there only beside one that is.
func mayBeSpecial(w uint64) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	q := w ^ (lo * '"')
	e := w ^ (lo * '\\')
	return ((w-lo*0x20)|(q-lo)|(e-lo)|w)&hi != 0
}

func isHex(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// decode returns the decoded content of the string at start:end (raw
// content offsets), exactly as encoding/json reads it.
func (s *scanner) decode(start, end int) []byte {
	var out string
	if err := json.Unmarshal(s.b[start-1:end+1], &out); err != nil {
		// Unreachable: the scanner accepted the string.
		return s.b[start:end]
	}
	return []byte(out)
}

// num consumes a number (JSON grammar) and returns it.
func (s *scanner) num() []byte {
	b := s.b
	start := s.i
	i := s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		s.i = i
		s.fail("invalid character in numeric literal")
		return nil
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			s.i = i
			s.fail("after decimal point in numeric literal")
			return nil
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			s.i = i
			s.fail("in exponent of numeric literal")
			return nil
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	s.i = i
	return b[start:i]
}
