package cli

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/cli/invocation"
)

// Set with -ldflags -X by `make build` from git: a build made with
// -buildvcs=false, or from a git worktree, has no VCS stamp of its own.
var (
	buildVersion  string
	buildCommit   string
	buildModified string // "true" or "false"
)

// BuildInfo is what --version and the version command report.
type BuildInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"modified"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// readBuildInfo merges the values the Makefile set with the binary's own
// build information; the Makefile's win, since they exist only where the
// toolchain's stamp could not be made.
func readBuildInfo(bi *debug.BuildInfo, ok bool) BuildInfo {
	info := BuildInfo{Version: "(devel)", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if ok {
		if v := bi.Main.Version; v != "" {
			info.Version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Commit = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	if buildVersion != "" {
		info.Version = buildVersion
	}
	if buildCommit != "" {
		info.Commit, info.Modified = buildCommit, buildModified == "true"
	}
	return info
}

func currentBuild() BuildInfo { return readBuildInfo(debug.ReadBuildInfo()) }

// String is the one line --version prints.
func (b BuildInfo) String() string {
	s := "lockledger " + b.Version
	if b.Commit != "" {
		s += ", commit " + b.Commit
		if b.Modified {
			s += " (modified)"
		}
	} else {
		s += ", commit unknown (built without VCS information)"
	}
	return s + ", " + b.Go + " " + b.Platform
}

var versionListing = invocation.Listing{
	Use:   "version",
	Short: "Print the version, the commit it was built from and the Go version",
}

func newVersion(g *invocation.Globals) *cobra.Command {
	return versionListing.Of(&cobra.Command{
		Long: `Print lockledger's module version, the git commit it was built from
("(modified)" when the tree had uncommitted changes) and the Go toolchain
and platform. Same as --version; --json prints an object with version,
commit, modified, go and platform.`,
		Example: `  lockledger version
  lockledger --version
  lockledger version --json | jq -r .commit`,
		Args: invocation.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			b := currentBuild()
			return g.Answer(b, true, func(w io.Writer) { fmt.Fprintln(w, b) })
		},
	})
}
