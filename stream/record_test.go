package stream

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/replay"
)

// Each format writes a body that is JSON compacted on one line, and a
// damaged row's bytes as a JSON string, as export writes them.
func TestBodiesAreOneLineAndDamagedOnesAJSONString(t *testing.T) {
	rows := []*replay.Row{
		{Seq: 1, Body: []byte("{\"seq\":1,\n  \"type\":\"lock_acquired\"}")},
		{Seq: 2, Body: []byte("{not json <")},
	}
	for _, format := range []string{FormatCloudEvents, FormatSyslog} {
		var out bytes.Buffer
		w, err := NewWriter(format, &out, "ledger", "host")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if err := w.Event(newRecord(r)); err != nil {
				t.Fatal(err)
			}
		}
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if len(lines) != 2 {
			t.Fatalf("%s: %d lines, want 2:\n%s", format, len(lines), out.String())
		}
		for i, want := range []string{`{"seq":1,"type":"lock_acquired"}`, `"{not json \u003c"`} {
			if !strings.Contains(lines[i], want) {
				t.Errorf("%s: line %d does not hold %s:\n%s", format, i+1, want, lines[i])
			}
		}
	}
}
