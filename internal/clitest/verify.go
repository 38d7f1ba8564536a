package clitest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// VerifyReport is the output of `lockledger verify --json`, as a reader
// outside the program sees it: the fields by their JSON names, kinds as
// plain strings.
type VerifyReport struct {
	OK            bool            `json:"ok"`
	Source        string          `json:"source"`
	LedgerID      string          `json:"ledger_id"`
	Genesis       string          `json:"genesis"`
	Events        int64           `json:"events"`
	FirstSeq      int64           `json:"first_seq"`
	LastSeq       int64           `json:"last_seq"`
	FirstPrevHash string          `json:"first_prev_hash"`
	HeadHash      string          `json:"head_hash"`
	Unreadable    bool            `json:"unreadable"`
	Replayed      bool            `json:"replayed"`
	Locks         int             `json:"locks_replayed"`
	LockFiles     int             `json:"lock_files_checked"`
	FirstBad      *VerifyProblem  `json:"first_bad"`
	Problems      []VerifyProblem `json:"problems"`
	ProblemCount  int             `json:"problem_count"`
	Foreign       []VerifyProblem `json:"foreign"`
	Notes         []string        `json:"notes"`
	Trust         string          `json:"trust"`
	UnsignedFrom  int64           `json:"unsigned_from"`
	Checkpoints   []struct {
		Source  string    `json:"source"`
		Size    int64     `json:"size"`
		Key     string    `json:"key"`
		Time    time.Time `json:"time"`
		Carried bool      `json:"carried"`
		Result  string    `json:"result"`
		Detail  string    `json:"detail"`
	} `json:"checkpoints"`
	// Uncosigned: per witness key given, the checkpoints it did not cosign.
	Uncosigned []struct {
		Witness  string  `json:"witness"`
		Cosigned int64   `json:"cosigned"`
		Count    int     `json:"count"`
		Sizes    []int64 `json:"sizes"`
	} `json:"uncosigned"`
	// Check is what a verify of a ledger read: "full", or "incremental"
	// (only the events after VerifiedFrom, a head a verify found intact).
	Check        string `json:"check"`
	VerifiedFrom *struct {
		Seq  int64  `json:"seq"`
		Hash string `json:"hash"`
	} `json:"verified_from"`
	// Recorded is the seq of the ledger_verified event verify appended
	// (0: none, as for a read-only ledger).
	Recorded int64 `json:"recorded"`
	// Warning: verify's warning that nothing outside the root vouches for
	// the ledger (an unsigned one).
	Warning string `json:"warning"`
}

// VerifyProblem is one finding of a VerifyReport.
type VerifyProblem struct {
	Seq    int64  `json:"seq"`
	Kind   string `json:"kind"`
	Lock   string `json:"lock_name"`
	Line   int64  `json:"line"`
	Detail string `json:"detail"`
}

// Verify runs `lockledger verify --json ARGS...` on root, fails the test
// unless it exits want, and decodes its report.
func Verify(t testing.TB, want int, root string, args ...string) VerifyReport {
	t.Helper()
	return DecodeVerify(t, Must(t, want, root, append([]string{"verify", "--json"}, args...)...))
}

// DecodeVerify decodes the report of a `verify --json` that has run.
func DecodeVerify(t testing.TB, r Result) VerifyReport {
	t.Helper()
	var v VerifyReport
	d := json.NewDecoder(strings.NewReader(r.Stdout))
	if err := d.Decode(&v); err != nil {
		t.Fatalf("verify --json: %v\nstdout: %s\nstderr: %s", err, r.Stdout, r.Stderr)
	}
	return v
}
