package pgtest

import (
	"os"
	"strings"
	"testing"
)

// The README's role statements are found: both CREATE ROLEs, then the
// grants, and nothing about the owner's role or database.
func TestREADMERolesReadsTheSetUp(t *testing.T) {
	readme, err := os.ReadFile("../../docs/postgresql.md")
	if err != nil {
		t.Fatal(err)
	}
	got := READMERoles(t, string(readme))
	if len(got) < 4 || got[0] != "CREATE ROLE lockledger_writer LOGIN" || got[1] != "CREATE ROLE lockledger_auditor LOGIN" {
		t.Fatalf("statements: %q", got)
	}
	for _, q := range got {
		if strings.Contains(q, "DATABASE") || strings.Contains(q, "ROLE lockledger LOGIN") {
			t.Errorf("the owner's set-up among the roles' statements: %q", q)
		}
	}
	if last := got[len(got)-1]; !strings.HasPrefix(last, "REVOKE UPDATE, DELETE, TRUNCATE ON events") {
		t.Errorf("last statement %q", last)
	}
}
