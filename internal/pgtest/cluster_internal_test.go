package pgtest

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLatestBinDirComparesVersionsAsNumbers(t *testing.T) {
	root := t.TempDir()
	names := []string{"initdb", "pg_ctl", "postgres"}
	for _, ver := range []string{"9.6", "15", "16", "notaversion"} {
		bin := filepath.Join(root, ver, "bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			// 16 lacks postgres: an incomplete installation is passed over.
			if ver == "16" && name == "postgres" {
				continue
			}
			if err := os.WriteFile(filepath.Join(bin, name), nil, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got, want := latestBinDir(root, names), filepath.Join(root, "15", "bin"); got != want {
		t.Errorf("latestBinDir = %s, want %s", got, want)
	}
	if got := latestBinDir(filepath.Join(root, "absent"), names); got != "" {
		t.Errorf("latestBinDir of a missing root = %q, want empty", got)
	}
}

func TestDBNameFitsIdentifierLimit(t *testing.T) {
	name := dbName("TestSomething/with a very long subtest name that goes on and on and on", 123456)
	if len(name) > 63 {
		t.Errorf("dbName gave %d bytes (%s), over PostgreSQL's 63", len(name), name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			t.Errorf("dbName gave %q, with %q needing quotes", name, r)
		}
	}
}
