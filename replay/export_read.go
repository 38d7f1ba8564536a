package replay

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ScanLines calls fn with each non-blank line of a JSON Lines file (an
// export, an archive, an evidence bundle), trimmed, and its 1-based line
// number; it returns how many lines it read, blank ones too. A line
// longer than MaxExportLine is ErrLineTooLong.
func ScanLines(r io.Reader, fn func(n int64, line []byte) error) (int64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxExportLine)
	var n int64
	for sc.Scan() {
		n++
		if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
			if err := fn(n, line); err != nil {
				return n, err
			}
		}
	}
	err := sc.Err()
	if errors.Is(err, bufio.ErrTooLong) {
		err = fmt.Errorf("line %d: %w (over %d bytes)", n+1, ErrLineTooLong, MaxExportLine)
	}
	return n, err
}

// ReadExport reads a JSON Lines export (or an archive, which is one) for
// a caller that checks it against something else: the checkpoints it
// carries, and every event line to fn in file order. It checks nothing
// (VerifyFile does): a line that is neither is an error.
func ReadExport(r io.Reader, fn func(*Row) error) (checkpoints [][]byte, err error) {
	_, err = ScanLines(r, func(n int64, line []byte) error {
		if h, ok := headerLine(line); ok {
			if h.note != nil && !h.cosigned {
				checkpoints = append(checkpoints, h.note)
			}
			return nil
		}
		row, err := ParseExportLine(line)
		if err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		row.Line = n
		return fn(row)
	})
	if err != nil {
		return nil, err
	}
	return checkpoints, nil
}
