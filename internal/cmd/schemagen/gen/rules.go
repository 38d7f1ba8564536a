package gen

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
)

// conjunction is the rule of a property that several schemas describe
// (allOf): one schema; an enum and a const (the envelope's type and the
// type file's); or {"type": "object"} and a more precise object.
func (g *generator) conjunction(ss []*node, ctx string) (string, error) {
	if len(ss) == 1 {
		return g.rule(ss[0], ctx)
	}
	if len(ss) == 2 {
		a, err := g.deref(ss[0])
		if err != nil {
			return "", err
		}
		b, err := g.deref(ss[1])
		if err != nil {
			return "", err
		}
		if a.get("enum") != nil && len(a.keys) == 1 && b.get("const") != nil && len(b.keys) == 1 && b.get("const").kind == 's' {
			c := b.get("const").str
			vals, err := strs(a.get("enum"))
			if err != nil {
				return "", err
			}
			if !slices.Contains(vals, c) {
				return "", fmt.Errorf("%s: const %q is outside the enum of %s", b, c, a)
			}
			return fmt.Sprintf("v.enumConst(%s, %q)", g.enum(a.get("enum"), ctx), c), nil
		}
		for _, p := range [][2]*node{{a, b}, {b, a}} {
			if isAnyObject(p[0]) && p[1].get("type") != nil && p[1].get("type").str == "object" {
				return g.rule(p[1], ctx)
			}
		}
	}
	return "", fmt.Errorf("%s: %d schemas for one property: no rule for their conjunction", ss[0], len(ss))
}

func isAnyObject(n *node) bool {
	return n.kind == 'o' && len(n.keys) == 1 && n.get("type") != nil && n.get("type").str == "object"
}

// deref follows a node that is only a $ref.
func (g *generator) deref(n *node) (*node, error) {
	for n.kind == 'o' && len(n.keys) == 1 && n.get("$ref") != nil {
		t, err := g.resolve(n, n.get("$ref").str)
		if err != nil {
			return nil, err
		}
		n = t
	}
	return n, nil
}

// enum returns the variable holding an enum's values, named after the
// property (and, where that name is taken, the event type or record).
func (g *generator) enum(n *node, ctx string) string {
	vals, _ := strs(n)
	name := lowerCamel(ctx) + "Values"
	for _, e := range g.enums {
		if slices.Equal(e.values, vals) {
			return e.name
		}
		if e.name == name {
			name = lowerCamel(ctx) + "In" + camel(g.owner) + "Values"
		}
	}
	g.enums = append(g.enums, enumVar{name: name, values: vals})
	return name
}

// rule is the Go expression that checks a value against schema n.
func (g *generator) rule(n *node, ctx string) (string, error) {
	if n.kind != 'o' {
		return "", fmt.Errorf("%s: a schema must be an object here", n)
	}
	if ref := n.get("$ref"); ref != nil {
		t, err := g.resolve(n, ref.str)
		if err != nil {
			return "", err
		}
		if len(n.keys) == 1 {
			if isRecord(t) {
				return g.recordOf(t, defName(t, ctx), nil, "")
			}
			return g.rule(t, ctx)
		}
		// A record with some of its properties narrowed.
		if err := n.only("$ref", "properties"); err != nil {
			return "", err
		}
		if !isRecord(t) {
			return "", fmt.Errorf("%s: properties beside a $ref are supported on an object only", n)
		}
		return g.recordOf(t, lowerCamel(ctx), n.get("properties"), n.String())
	}
	if any := n.get("anyOf"); any != nil {
		if err := n.only("anyOf"); err != nil {
			return "", err
		}
		if len(any.elems) == 2 {
			c, p := any.elems[0], any.elems[1]
			if c.get("const") != nil && len(c.keys) == 1 && c.get("const").kind == 's' {
				if min, max, ok := absPath(p); ok {
					return fmt.Sprintf("v.constOrAbsPath(%q, %s, %s)", c.get("const").str, min, max), nil
				}
			}
		}
		return "", fmt.Errorf("%s: only anyOf [{\"const\": string}, an absolute path] is supported", n)
	}
	if e := n.get("enum"); e != nil {
		if err := n.only("enum"); err != nil {
			return "", err
		}
		if _, err := strs(e); err != nil {
			return "", err
		}
		return "v.enum(" + g.enum(e, ctx) + ")", nil
	}
	if c := n.get("const"); c != nil {
		switch {
		case c.kind == 's' && len(n.keys) == 1:
			return fmt.Sprintf("v.constString(%q)", c.str), nil
		case c.kind == 'n' && c.num == "1" && len(n.keys) == 2 && n.get("format") != nil && n.get("format").str == "int64":
			return "v.constOne()", nil
		}
		return "", fmt.Errorf("%s: only a string const, or {\"const\": 1, \"format\": \"int64\"}, is supported", n)
	}
	t := n.get("type")
	if t == nil || t.kind != 's' {
		return "", fmt.Errorf("%s: a schema needs a type, $ref, anyOf, enum or const", n)
	}
	switch t.str {
	case "string":
		if err := n.only("type", "minLength", "maxLength", "pattern", "format"); err != nil {
			return "", err
		}
		if f := n.get("format"); f != nil {
			if f.str != "date-time" || len(n.keys) != 2 {
				return "", fmt.Errorf("%s: only the date-time format, alone, is supported on a string", n)
			}
			return "v.dateTime()", nil
		}
		if min, max, ok := absPath(n); ok {
			return fmt.Sprintf("v.absPath(%s, %s)", min, max), nil
		}
		if p := n.get("pattern"); p != nil {
			m := matchers[p.str]
			if m == "" {
				return "", fmt.Errorf("%s: pattern %q has no matcher: write one in schema/patterns.go and name it in internal/cmd/schemagen/gen's matchers", n, p.str)
			}
			if len(n.keys) != 2 {
				return "", fmt.Errorf("%s: a pattern with lengths is supported for %q only", n, absPathPattern)
			}
			return fmt.Sprintf("v.pattern(%s, %s)", m, strconv.Quote(p.str)), nil
		}
		min, max, err := bounds(n, "minLength", "0", "maxLength")
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("v.str(%s, %s)", min, max), nil
	case "integer", "number":
		if err := n.only("type", "format", "minimum", "maximum"); err != nil {
			return "", err
		}
		want := map[string]string{"integer": "int64", "number": "float64"}[t.str]
		if f := n.get("format"); f == nil || f.str != want {
			return "", fmt.Errorf("%s: every %s needs the format %q", n, t.str, want)
		}
		min, max, err := bounds(n, "minimum", "noMin", "maximum")
		if err != nil {
			return "", err
		}
		if t.str == "number" {
			if max != "noMax" {
				return "", fmt.Errorf("%s: maximum is not supported on a number", n)
			}
			return fmt.Sprintf("v.number(%s)", min), nil
		}
		return fmt.Sprintf("v.integer(%s, %s)", min, max), nil
	case "boolean":
		if err := n.only("type"); err != nil {
			return "", err
		}
		return "v.boolean()", nil
	case "object":
		switch {
		case len(n.keys) == 1:
			return "v.anyObject()", nil
		case isRecord(n):
			return g.recordOf(n, lowerCamel(ctx), nil, "")
		}
		if err := n.only("type", "additionalProperties"); err != nil {
			return "", err
		}
		if ap := n.get("additionalProperties"); ap.kind == 'o' && len(ap.keys) == 1 && ap.get("type") != nil && ap.get("type").str == "string" {
			return "v.stringMap()", nil
		}
		return "", fmt.Errorf("%s: only additionalProperties {\"type\": \"string\"} is supported", n)
	case "array":
		if err := n.only("type", "items", "minItems", "maxItems"); err != nil {
			return "", err
		}
		items := n.get("items")
		if items == nil {
			return "", fmt.Errorf("%s: an array needs items", n)
		}
		item, err := g.rule(items, ctx+"_item")
		if err != nil {
			return "", err
		}
		min, max, err := bounds(n, "minItems", "0", "maxItems")
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("v.array(%s, %s, %s)", min, max, g.item(item, ctx, items)), nil
	}
	return "", fmt.Errorf("%s: type %q is not supported", n, t.str)
}

func (g *generator) item(rule, ctx string, n *node) string {
	for _, it := range g.items {
		if it.rule == rule {
			return it.ident
		}
	}
	g.items = append(g.items, itemKind{ident: "item" + camel(ctx), rule: rule, source: n.String()})
	return "item" + camel(ctx)
}

// absPath reads {"type": "string", "pattern": "^/"} with its lengths.
func absPath(n *node) (min, max string, ok bool) {
	if n.only("type", "minLength", "maxLength", "pattern") != nil || n.get("type") == nil || n.get("type").str != "string" ||
		n.get("pattern") == nil || n.get("pattern").str != absPathPattern {
		return "", "", false
	}
	min, max, err := bounds(n, "minLength", "0", "maxLength")
	return min, max, err == nil
}

// bounds reads the integer keywords lo and hi of n, as Go expressions:
// loAbsent and noMax where they are absent.
func bounds(n *node, lo, loAbsent, hi string) (min, max string, err error) {
	read := func(key, absent string) string {
		v := n.get(key)
		if v == nil || err != nil {
			return absent
		}
		if _, perr := strconv.ParseInt(string(v.num), 10, 64); v.kind != 'n' {
			err = fmt.Errorf("%s: %s must be a number", n, key)
		} else if perr != nil {
			err = fmt.Errorf("%s: %s must be an int64 written as one", n, key)
		}
		return string(v.num)
	}
	min, max = read(lo, loAbsent), read(hi, "noMax")
	return min, max, err
}

// isRecord: an object schema with fixed properties and no others.
func isRecord(n *node) bool {
	return n.kind == 'o' && n.get("properties") != nil &&
		(n.get("additionalProperties") != nil || n.get("unevaluatedProperties") != nil)
}

// defName names a record by its definition: the def or file it is.
func defName(n *node, ctx string) string {
	if n.ptr == "" {
		return lowerCamel(strings.TrimSuffix(n.file, path.Ext(n.file)))
	}
	if i := strings.LastIndex(n.ptr, "/"); i >= 0 && strings.HasPrefix(n.ptr, "/$defs/") {
		return lowerCamel(n.ptr[i+1:])
	}
	return lowerCamel(ctx)
}
