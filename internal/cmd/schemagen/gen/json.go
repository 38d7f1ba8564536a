package gen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// node is a JSON value of a schema file with its members in file order
// (the order gives the generated fields theirs).
type node struct {
	file  string // the schema file it is in
	ptr   string // its JSON pointer in that file
	kind  byte   // 'o'bject, 'a'rray, 's'tring, 'n'umber, 'b'oolean, 'z' null
	keys  []string
	vals  map[string]*node
	elems []*node
	str   string
	num   json.Number
	b     bool
}

func (n *node) String() string { return n.file + "#" + n.ptr }

func (n *node) get(key string) *node {
	if n == nil || n.kind != 'o' {
		return nil
	}
	return n.vals[key]
}

// only reports an error naming the first key of n outside allowed.
func (n *node) only(allowed ...string) error {
	for _, k := range n.keys {
		if !slices.Contains(allowed, k) {
			return fmt.Errorf("%s: keyword %q is not supported here (allowed: %s)", n, k, strings.Join(allowed, ", "))
		}
	}
	return nil
}

func parse(file string, data []byte) (*node, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	n, err := parseValue(d, file, "")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s: data after the schema", file)
	}
	return n, nil
}

func parseValue(d *json.Decoder, file, ptr string) (*node, error) {
	t, err := d.Token()
	if err != nil {
		return nil, err
	}
	n := &node{file: file, ptr: ptr}
	switch t := t.(type) {
	case json.Delim:
		if t == '[' {
			n.kind = 'a'
			for i := 0; d.More(); i++ {
				e, err := parseValue(d, file, fmt.Sprintf("%s/%d", ptr, i))
				if err != nil {
					return nil, err
				}
				n.elems = append(n.elems, e)
			}
		} else {
			n.kind = 'o'
			n.vals = map[string]*node{}
			for d.More() {
				kt, err := d.Token()
				if err != nil {
					return nil, err
				}
				k := kt.(string)
				if _, dup := n.vals[k]; dup {
					return nil, fmt.Errorf("%s: duplicate key %q", ptr, k)
				}
				tok := strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
				v, err := parseValue(d, file, ptr+"/"+tok)
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, k)
				n.vals[k] = v
			}
		}
		if _, err := d.Token(); err != nil { // the closing delimiter
			return nil, err
		}
	case string:
		n.kind, n.str = 's', t
	case json.Number:
		n.kind, n.num = 'n', t
	case bool:
		n.kind, n.b = 'b', t
	case nil:
		n.kind = 'z'
	}
	return n, nil
}
