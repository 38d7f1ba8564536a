package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
)

// verifyReport is what these tests read of verify --json.
type verifyReport struct {
	OK       bool  `json:"ok"`
	Events   int64 `json:"events"`
	FirstBad *struct {
		Seq    int64  `json:"seq"`
		Kind   string `json:"kind"`
		Detail string `json:"detail"`
	} `json:"first_bad"`
	ProblemCount int `json:"problem_count"`
}

func verifyJSON(t *testing.T, root string, want int, args ...string) verifyReport {
	t.Helper()
	r := clitest.Must(t, want, root, append([]string{"verify", "--json"}, args...)...)
	var v verifyReport
	if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil {
		t.Fatalf("verify --json: %v\n%s", err, r.Stdout)
	}
	return v
}

// An empty or blank export file is no proof of anything: verify --file
// fails it, exit 1, and names the problem.
func TestVerifyFileFailsAnEmptyOrBlankExport(t *testing.T) {
	root := t.TempDir()
	dir := t.TempDir()
	for name, data := range map[string]string{"empty.jsonl": "", "blank.jsonl": "\n  \n\n"} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		v := verifyJSON(t, root, 1, "--file", path)
		if v.OK || v.FirstBad == nil || v.FirstBad.Kind != "empty" {
			t.Errorf("%s: %+v, want a failure of kind empty", name, v)
		}
		plain := clitest.Must(t, 1, root, "verify", "--file", path).Stdout
		if !strings.Contains(plain, "verify: FAILED") || !regexp.MustCompile(`first bad\s+empty: `).MatchString(plain) {
			t.Errorf("%s: plain report:\n%s", name, plain)
		}
	}
}
