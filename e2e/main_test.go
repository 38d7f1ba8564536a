// Package e2e drives the lockledger command line as real processes on real
// SQLite files in temporary directories.
package e2e

import (
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
)

func TestMain(m *testing.M) { clitest.Main(m) }
