package replay

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ReadExport reads a JSON Lines export (or an archive, which is one) for
// a caller that checks it against something else: the checkpoints it
// carries, and every event line to fn in file order. It checks nothing
// (VerifyFile does): a line that is neither is an error.
func ReadExport(r io.Reader, fn func(*Row) error) (checkpoints [][]byte, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxExportLine)
	var n int64
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if h, ok := headerLine(line); ok {
			if h.note != nil && !h.cosigned {
				checkpoints = append(checkpoints, h.note)
			}
			continue
		}
		row, err := parseExportLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		row.Line = n
		if err := fn(row); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("line %d: %w (over %d bytes)", n+1, ErrLineTooLong, MaxExportLine)
		}
		return nil, err
	}
	return checkpoints, nil
}
