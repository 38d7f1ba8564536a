package invocation

import (
	"bytes"
	"encoding/json"
	"testing"
)

// JSONOut writes each C1 control, DEL and bidirectional control as a \u
// escape however the JSON reaches it: in one piece, or cut anywhere (a
// buffered writer's flushes), a character cut between two pieces included.
// Everything else, other non-ASCII text too, is as it was, and a JSON
// reader reads the same value.
func TestJSONOutEscapesWhatATerminalObeysInAnyPieces(t *testing.T) {
	value := map[string]string{"actor": "tower\u009b31m\u0090q\u202eevil\u007f", "host": "é\u0085ü\u00a0x\u2066\U0001F600\u2028"}
	raw, err := json.Marshal(value)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"actor":"tower\u009b31m\u0090q\u202eevil\u007f","host":"é\u0085ü` + "\u00a0" + `x\u2066` + "\U0001F600" + `\u2028"}`
	for size := 1; size <= len(raw); size++ {
		var out bytes.Buffer
		w := JSONOut(&out)
		for i := 0; i < len(raw); i += size {
			if n, err := w.Write(raw[i:min(i+size, len(raw))]); err != nil || n != min(size, len(raw)-i) {
				t.Fatalf("pieces of %d: Write = %d, %v", size, n, err)
			}
		}
		if out.String() != want {
			t.Fatalf("pieces of %d: %q, want %q", size, out.String(), want)
		}
		var back map[string]string
		if err := json.Unmarshal(out.Bytes(), &back); err != nil || back["actor"] != value["actor"] || back["host"] != value["host"] {
			t.Fatalf("pieces of %d: read back %q (%v), want %q", size, back, err, value)
		}
	}
}
