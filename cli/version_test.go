package cli

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestBuildInfoPrefersTheMakefilesStamp(t *testing.T) {
	bi := &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}}
	got := readBuildInfo(bi, true)
	if got.Version != "v1.2.3" || got.Commit != "abc" || !got.Modified {
		t.Fatalf("from the toolchain's stamp: %+v", got)
	}
	if s := got.String(); !strings.Contains(s, "v1.2.3, commit abc (modified), go") {
		t.Fatalf("line: %q", s)
	}
	buildCommit, buildModified = "def", "false"
	t.Cleanup(func() { buildCommit, buildModified = "", "" })
	if got := readBuildInfo(bi, true); got.Commit != "def" || got.Modified {
		t.Fatalf("-ldflags -X stamp: %+v", got)
	}
	if got := readBuildInfo(nil, false); got.Version != "(devel)" || got.Commit != "def" {
		t.Fatalf("without build info: %+v", got)
	}
}
