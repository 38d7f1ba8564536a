// Package e2e drives the lockledger command line as real processes on real
// SQLite files in temporary directories.
package e2e

import (
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
)

// The end-to-end tests wait on processes more than they compute: four of
// the parallel ones run at once. Nearly all of them run every command
// they start, so the CLI is built before them.
func TestMain(m *testing.M) { clitest.Main(m, clitest.Parallel(4), clitest.BuildFirst) }
