package store

import (
	"context"
	"fmt"
)

// SendEvents is a group's write of one event for each of bodies, from seq
// first on, sent through q as Flush sends a group's writes.
func SendEvents(ctx context.Context, q Execer, first int64, bodies [][]byte) error {
	b := &decisionBatch{}
	for i, body := range bodies {
		seq := first + int64(i)
		b.writes.Events = append(b.writes.Events, eventJSON{seq, fmt.Sprint("e", seq), "lock_acquired", "a", "r", "me",
			"2026-12-07T00:00:00Z", byteaText(body), fmt.Sprint("h", seq-1), fmt.Sprint("h", seq)})
	}
	return b.send(ctx, q, b.writes.end(), nil)
}

// UseWriteEncoders takes n of the pool's encoders of group writes, as n
// other writes of the process would at once, encodes over their buffers,
// and gives them back.
func UseWriteEncoders(n int) {
	var taken []*writeEncoder
	for range n {
		e := writeEncoders.Get().(*writeEncoder)
		e.buf.Reset()
		if err := e.enc.Encode(decisionWrites{Events: []eventJSON{{Body: "another write's body"}}}); err != nil {
			panic(err)
		}
		taken = append(taken, e)
	}
	for _, e := range taken {
		writeEncoders.Put(e)
	}
}
