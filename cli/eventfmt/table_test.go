package eventfmt

import (
	"strings"
	"testing"

	"github.com/lockledger/lockledger/cli/invocation"
)

func TestTableColoursWithoutSkewingColumns(t *testing.T) {
	var b strings.Builder
	tb := NewTable(&b, true, "A", "EVENT", "C")
	_ = tb.Row(Cell{Text: "1"}, Cell{Text: "lock_stolen", Color: AnsiMagenta}, Cell{Text: "x"})
	_ = tb.Row(Cell{Text: "22"}, Cell{Text: "lock_heartbeat", Color: AnsiDim}, Cell{Text: "y"})
	if err := tb.Flush(); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, AnsiMagenta+"lock_stolen"+AnsiReset) {
		t.Fatalf("no colour: %q", out)
	}
	plain := strings.NewReplacer(AnsiMagenta, "", AnsiDim, "", AnsiBold, "", AnsiReset, "").Replace(out)
	want := "A   EVENT           C\n1   lock_stolen     x\n22  lock_heartbeat  y\n"
	if plain != want {
		t.Fatalf("columns:\n%s\nwant\n%s", plain, want)
	}
	t.Setenv("NO_COLOR", "1")
	if invocation.ColorOK(&b) {
		t.Fatal("colour with NO_COLOR set")
	}
}
