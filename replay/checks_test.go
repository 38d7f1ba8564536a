package replay_test

import (
	"strings"
	"testing"

	"github.com/lockledger/lockledger/replay"
)

// An export without a single line fails: an empty file proves nothing.
func TestVerifyFileFailsAnEmptyOrBlankFile(t *testing.T) {
	for _, data := range []string{"", "\n", "  \n\t\n\r\n"} {
		rep, err := replay.VerifyFile(strings.NewReader(data), "empty.jsonl", "")
		if err != nil {
			t.Fatal(err)
		}
		if rep.OK || rep.FirstBad == nil || rep.FirstBad.Kind != replay.KindEmpty || rep.ProblemCount != 1 {
			t.Errorf("%q: OK=%v first bad %+v, %d problems; want one %s", data, rep.OK, rep.FirstBad, rep.ProblemCount, replay.KindEmpty)
		}
	}
}
