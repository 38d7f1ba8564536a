package jepsen_test

import (
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/jepsen"
)

// The test binary is also the JOB of the real run (TestSmokeRun).
func TestMain(m *testing.M) {
	jepsen.JobMain()
	clitest.Main(m)
}
