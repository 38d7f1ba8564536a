package gen

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// recordOf makes the record of object schema n, narrowed by overlay
// (properties also described elsewhere, with key the narrowing's place),
// and returns its rule.
func (g *generator) recordOf(n *node, name string, overlay *node, key string) (string, error) {
	if key == "" {
		key = n.String()
	}
	if r := g.records[key]; r != nil {
		return r.call(), nil
	}
	if err := n.only("$schema", "$id", "title", "$comment", "type", "required", "properties", "additionalProperties"); err != nil {
		return "", err
	}
	if ap := n.get("additionalProperties"); ap == nil || ap.kind != 'b' || ap.b {
		return "", fmt.Errorf("%s: additionalProperties must be false", n)
	}
	if t := n.get("type"); t == nil || t.str != "object" {
		return "", fmt.Errorf("%s: a record needs type object", n)
	}
	for _, r := range g.records {
		if r.name == name {
			return "", fmt.Errorf("%s: two records named %s", n, name)
		}
	}
	source := n.String()
	if overlay != nil {
		source = key + " (" + n.String() + " narrowed)"
	}
	r := newRecord(name, source, "additionalProperties")
	g.records[key] = r
	g.order = append(g.order, r)
	props := n.get("properties")
	owner := g.owner
	defer func() { g.owner = owner }()
	for _, p := range props.keys {
		g.owner = name
		ss := []*node{props.vals[p]}
		if o := overlay.get(p); o != nil {
			ss = append(ss, o)
		}
		rule, err := g.conjunction(ss, p)
		if err != nil {
			return "", err
		}
		r.add(p).rules = []kindRule{{rule: rule}}
	}
	if overlay != nil {
		for _, p := range overlay.keys {
			if props.get(p) == nil {
				return "", fmt.Errorf("%s: narrows %q, which %s does not have", overlay, p, n)
			}
		}
	}
	req, err := strs(n.get("required"))
	if err != nil {
		return "", err
	}
	for _, p := range req {
		if props.get(p) == nil {
			return "", fmt.Errorf("%s: requires %q, which it does not allow", n, p)
		}
	}
	r.required[""] = req
	return r.call(), nil
}

func (r *record) call() string {
	return fmt.Sprintf("v.record(&%sSchema, %sAll, %sRequired)", r.name, r.name, r.name)
}

func (r *record) ident(f string) string {
	if r.exported {
		return camel(r.name) + camel(f)
	}
	return r.name + camel(f)
}

// fieldType is the Go type of the record's field indices.
func (r *record) fieldType() string {
	if r.exported {
		return camel(r.name) + "Field"
	}
	return "int"
}

// mask is the Go literal of a fieldSet holding names: the fields below
// 64 in its first word, the others in its second.
func (r *record) mask(names []string) string {
	var words [2][]string
	for i, f := range r.fields {
		if slices.Contains(names, f.name) {
			term := "1<<" + r.ident(f.name)
			if i >= 64 {
				term = "1<<(" + r.ident(f.name) + "-64)"
			}
			words[i/64] = append(words[i/64], term)
		}
	}
	word := func(terms []string) string { return cmp.Or(strings.Join(terms, " | "), "0") }
	switch {
	case len(words[1]) > 0:
		return "fieldSet{" + word(words[0]) + ", " + word(words[1]) + "}"
	case len(words[0]) > 0:
		return "fieldSet{" + word(words[0]) + "}"
	}
	return "fieldSet{}"
}

var initialisms = map[string]string{"id": "ID", "ns": "NS", "pid": "PID", "pids": "PIDs", "ttl": "TTL", "uid": "UID", "v1": "V1"}

func camel(s string) string {
	var b strings.Builder
	for _, w := range strings.Split(s, "_") {
		if w == "" {
			continue
		}
		if i, ok := initialisms[w]; ok {
			b.WriteString(i)
			continue
		}
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return b.String()
}

func lowerCamel(s string) string {
	c := camel(s)
	if c == "" {
		return c
	}
	return strings.ToLower(c[:1]) + c[1:]
}
