package lockcmd_test

import (
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
)

func TestMain(m *testing.M) { clitest.Main(m) }
