package lease_test

import (
	"testing"

	"github.com/lockledger/lockledger/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
