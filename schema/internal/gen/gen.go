// Package gen writes schema/fields_gen.go from the schema files: the
// kinds of document, the fields of every object the schemas describe, the
// fields each event type allows and requires, and the rule that checks
// each field, as calls to the hand-written rules of package schema. It
// refuses any keyword or shape of schema it has no rule for, so that a
// schema change the validator cannot follow fails here, not in production.
package gen

import (
	"bytes"
	"fmt"
	"go/format"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// The files with a fixed role: envelope.json is every event's base and its
// "type" enum lists the event types, each described by <type>.json;
// lock_v1.json is the lock file.
const (
	envelopeFile = "envelope.json"
	lockFileFile = "lock_v1.json"
)

// matchers names the hand-written function (schema/patterns.go) that
// matches each pattern the schemas use.
var matchers = map[string]string{
	"^[0-9A-HJKMNP-TV-Z]{26}$": "isEventID",
	`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{9}Z$`: "isEventTime",
	"^[a-z0-9]([a-z0-9_-]{0,126}[a-z0-9])?$":                             "isLockName",
	"^[A-Za-z0-9_.:-]{1,128}$":                                           "isRequestID",
	"^sha256:[0-9a-f]{64}$":                                              "isSHA256Ref",
	"^[0-9a-f]{64}$":                                                     "isHexHash",
}

// absPathPattern is the pattern of an absolute path, checked with its
// lengths by the absPath rule.
const absPathPattern = "^/"

// exported are constants of package schema read from the schema files.
var exported = []struct {
	name, ref, doc string
}{
	{"MaxLimit", "defs.json#/$defs/limit/maximum", "MaxLimit is the largest number of slots a semaphore may have (defs.json's limit)."},
}

// Source returns the Go source of fields_gen.go for the schema files
// (*.json) in fsys.
func Source(fsys fs.FS) ([]byte, error) {
	g := &generator{files: map[string]*node{}, records: map[string]*record{}, enums: map[string]string{}, items: map[string]string{}}
	names, err := fs.Glob(fsys, "*.json")
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		f, err := fsys.Open(name)
		if err != nil {
			return nil, err
		}
		n, err := parse(name, f)
		f.Close()
		if err != nil {
			return nil, err
		}
		g.files[name] = n
	}
	if err := g.build(); err != nil {
		return nil, err
	}
	src := g.emit()
	out, err := format.Source(src)
	if err != nil {
		return nil, fmt.Errorf("gofmt: %w\n%s", err, src)
	}
	return out, nil
}

type generator struct {
	files map[string]*node
	kinds []kind // the event types, then the lock file

	event   *record
	records map[string]*record // by the schema node they describe
	order   []*record          // records in the order they were found

	enums     map[string]string // quoted values joined -> var name
	enumOrder []enumVar
	items     map[string]string // rule -> item kind
	itemOrder []itemKind
	consts    []string
	owner     string // the event type or record whose rules are being made
}

type kind struct {
	name   string // the document's name: an event type or "lock_v1"
	ident  string // its Go constant
	source string // its schema file
}

type enumVar struct {
	name   string
	values []string
}

type itemKind struct {
	ident, rule, source string
}

// record is an object with a fixed set of properties.
type record struct {
	name   string // Go identifier stem
	// exported: its fields are a type of package schema (<Name>Field),
	// for decoders; a record that shares another's fields is not.
	exported bool
	source string
	extra  string // the keyword that refuses other properties
	fields []*field
	byName map[string]*field
	// together: properties present all or none (dependentRequired).
	together []string
	// required: for the event record, per event kind.
	required map[string][]string
	allowed  map[string][]string
}

type field struct {
	name  string
	rules []kindRule // one, or one per group of event kinds
}

type kindRule struct {
	kinds []string // kind identifiers; nil for a record of one schema
	rule  string
}

func (r *record) add(name string) *field {
	if f := r.byName[name]; f != nil {
		return f
	}
	f := &field{name: name}
	r.fields = append(r.fields, f)
	r.byName[name] = f
	return f
}

func newRecord(name, source, extra string) *record {
	return &record{name: name, source: source, extra: extra, byName: map[string]*field{},
		required: map[string][]string{}, allowed: map[string][]string{}}
}

// resolve follows a $ref from a node of file.
func (g *generator) resolve(from *node, ref string) (*node, error) {
	file, frag, _ := strings.Cut(ref, "#")
	if file == "" {
		file = from.file
	}
	n := g.files[file]
	if n == nil {
		return nil, fmt.Errorf("%s: $ref %q: no schema file %s", from, ref, file)
	}
	if frag != "" {
		for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			if n = n.get(tok); n == nil {
				return nil, fmt.Errorf("%s: $ref %q: nothing at %s", from, ref, frag)
			}
		}
	}
	return n, nil
}

func (g *generator) build() error {
	env := g.files[envelopeFile]
	if env == nil {
		return fmt.Errorf("no %s", envelopeFile)
	}
	typ := env.get("properties").get("type").get("enum")
	if typ == nil || typ.kind != 'a' {
		return fmt.Errorf("%s: no enum of event types at /properties/type", envelopeFile)
	}
	for _, t := range typ.elems {
		if t.kind != 's' {
			return fmt.Errorf("%s: event type %s is not a string", envelopeFile, t)
		}
		g.kinds = append(g.kinds, kind{name: t.str, ident: "k" + camel(t.str), source: t.str + ".json"})
	}
	lockName := strings.TrimSuffix(lockFileFile, ".json")
	g.kinds = append(g.kinds, kind{name: lockName, ident: "k" + camel(lockName), source: lockFileFile})

	// The lock file first: previous_lock narrows it and shares its fields.
	lf := g.files[lockFileFile]
	if lf == nil {
		return fmt.Errorf("no %s", lockFileFile)
	}
	if _, err := g.recordOf(lf, lowerCamel(lockName), nil, ""); err != nil {
		return err
	}
	g.event = newRecord("event", "an event body ("+envelopeFile+" and the event types' files)", "unevaluatedProperties")
	for _, k := range g.kinds[:len(g.kinds)-1] {
		if err := g.eventKind(k); err != nil {
			return err
		}
	}
	for _, c := range exported {
		file, frag, _ := strings.Cut(c.ref, "#")
		n, err := g.resolve(&node{file: file}, "#"+frag)
		if err != nil {
			return err
		}
		if n.kind != 'n' {
			return fmt.Errorf("%s is not a number", c.ref)
		}
		g.consts = append(g.consts, fmt.Sprintf("// %s\nconst %s = %s\n", c.doc, c.name, n.num))
	}
	return nil
}

// eventKind adds one event type's fields to the event record: those of
// its allOf parts (the envelope, defs.json's acquired) and its own.
func (g *generator) eventKind(k kind) error {
	root := g.files[k.source]
	if root == nil {
		return fmt.Errorf("event type %s has no schema file %s", k.name, k.source)
	}
	if err := root.only("$schema", "$id", "title", "$comment", "allOf", "required", "properties", "unevaluatedProperties"); err != nil {
		return err
	}
	if u := root.get("unevaluatedProperties"); u == nil || u.kind != 'b' || u.b {
		return fmt.Errorf("%s: unevaluatedProperties must be false", root)
	}
	parts := []*node{}
	if all := root.get("allOf"); all != nil {
		for _, p := range all.elems {
			if err := p.only("$ref"); err != nil {
				return err
			}
			t, err := g.resolve(p, p.get("$ref").str)
			if err != nil {
				return err
			}
			parts = append(parts, t)
		}
	}
	parts = append(parts, root)
	subs := map[string][]*node{}
	var names, required []string
	var together []string
	for _, p := range parts {
		if p != root {
			if err := p.only("$schema", "$id", "title", "$comment", "type", "required", "properties", "dependentRequired"); err != nil {
				return err
			}
			if t := p.get("type"); t != nil && t.str != "object" {
				return fmt.Errorf("%s: an event's part must be an object", p)
			}
		}
		props := p.get("properties")
		if props == nil {
			return fmt.Errorf("%s: no properties", p)
		}
		for _, name := range props.keys {
			if subs[name] == nil {
				names = append(names, name)
			}
			subs[name] = append(subs[name], props.vals[name])
		}
		req, err := strs(p.get("required"))
		if err != nil {
			return err
		}
		required = append(required, req...)
		if dr := p.get("dependentRequired"); dr != nil {
			t, err := togetherSet(dr)
			if err != nil {
				return err
			}
			together = append(together, t...)
		}
	}
	if g.event.together == nil {
		g.event.together = together
	} else if strings.Join(g.event.together, ",") != strings.Join(together, ",") {
		return fmt.Errorf("%s: dependentRequired differs from the other event types'", root)
	}
	forbidden := map[string]bool{}
	g.owner = k.name
	for _, name := range names {
		ss := subs[name]
		if len(ss) == 0 {
			continue
		}
		for _, s := range ss {
			if s.kind == 'b' && !s.b {
				forbidden[name] = true
			}
		}
		if forbidden[name] {
			continue
		}
		rule, err := g.conjunction(ss, name, k)
		if err != nil {
			return err
		}
		f := g.event.add(name)
		f.rules = addKindRule(f.rules, k.ident, rule)
		g.event.allowed[k.ident] = append(g.event.allowed[k.ident], name)
	}
	seen := map[string]bool{}
	for _, name := range required {
		if forbidden[name] || subs[name] == nil {
			return fmt.Errorf("%s: requires %q, which it does not allow", root, name)
		}
		if !seen[name] {
			seen[name] = true
			g.event.required[k.ident] = append(g.event.required[k.ident], name)
		}
	}
	return nil
}

func addKindRule(rules []kindRule, k, rule string) []kindRule {
	for i := range rules {
		if rules[i].rule == rule {
			rules[i].kinds = append(rules[i].kinds, k)
			return rules
		}
	}
	return append(rules, kindRule{kinds: []string{k}, rule: rule})
}

// togetherSet reads a dependentRequired in which each property requires
// all the others: one set, present all or none.
func togetherSet(dr *node) ([]string, error) {
	set := append([]string{}, dr.keys...)
	sort.Strings(set)
	for _, k := range dr.keys {
		req, err := strs(dr.vals[k])
		if err != nil {
			return nil, err
		}
		others := []string{}
		for _, s := range set {
			if s != k {
				others = append(others, s)
			}
		}
		sort.Strings(req)
		if strings.Join(req, ",") != strings.Join(others, ",") {
			return nil, fmt.Errorf("%s: only a dependentRequired in which each property requires all the others is supported", dr)
		}
	}
	return dr.keys, nil
}

func strs(n *node) ([]string, error) {
	if n == nil {
		return nil, nil
	}
	if n.kind != 'a' {
		return nil, fmt.Errorf("%s: expected an array of strings", n)
	}
	var out []string
	for _, e := range n.elems {
		if e.kind != 's' {
			return nil, fmt.Errorf("%s: expected a string", e)
		}
		out = append(out, e.str)
	}
	return out, nil
}

// conjunction is the rule of a property that several schemas describe
// (allOf): one schema; an enum and a const (the envelope's type and the
// type file's); or {"type": "object"} and a more precise object.
func (g *generator) conjunction(ss []*node, ctx string, k kind) (string, error) {
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
			found := false
			for _, v := range vals {
				found = found || v == c
			}
			if !found {
				return "", fmt.Errorf("%s: const %q is outside the enum of %s", b, c, a)
			}
			return fmt.Sprintf("v.enumConst(%s, %q)", g.enum(a.get("enum"), ctx, k), c), nil
		}
		if isAnyObject(a) && b.get("type") != nil && b.get("type").str == "object" {
			return g.rule(b, ctx)
		}
		if isAnyObject(b) && a.get("type") != nil && a.get("type").str == "object" {
			return g.rule(a, ctx)
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

// enum returns the variable holding an enum's values.
func (g *generator) enum(n *node, ctx string, k kind) string {
	vals, _ := strs(n)
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = strconv.Quote(v)
	}
	key := strings.Join(q, ", ")
	if name, ok := g.enums[key]; ok {
		return name
	}
	name := lowerCamel(ctx) + "Values"
	for _, e := range g.enumOrder {
		if e.name == name {
			name = lowerCamel(ctx) + "In" + camel(k.name) + "Values"
		}
	}
	g.enums[key] = name
	g.enumOrder = append(g.enumOrder, enumVar{name: name, values: vals})
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
				r, err := g.recordOf(t, defName(t, ctx), nil, "")
				if err != nil {
					return "", err
				}
				return r.call(), nil
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
		r, err := g.recordOf(t, lowerCamel(ctx), n.get("properties"), n.String())
		if err != nil {
			return "", err
		}
		return r.call(), nil
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
		return "v.enum(" + g.enum(e, ctx, kind{name: g.owner}) + ")", nil
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
				return "", fmt.Errorf("%s: pattern %q has no matcher: write one in schema/patterns.go and name it in schema/internal/gen's matchers", n, p.str)
			}
			if len(n.keys) != 2 {
				return "", fmt.Errorf("%s: a pattern with lengths is supported for %q only", n, absPathPattern)
			}
			return fmt.Sprintf("v.pattern(%s, %s)", m, strconv.Quote(p.str)), nil
		}
		min, err := intKeyword(n, "minLength", "0")
		if err != nil {
			return "", err
		}
		max, err := intKeyword(n, "maxLength", "noMax")
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
		min, err := intKeyword(n, "minimum", "noMin")
		if err != nil {
			return "", err
		}
		max, err := intKeyword(n, "maximum", "noMax")
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
			r, err := g.recordOf(n, lowerCamel(ctx), nil, "")
			if err != nil {
				return "", err
			}
			return r.call(), nil
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
		min, err := intKeyword(n, "minItems", "0")
		if err != nil {
			return "", err
		}
		max, err := intKeyword(n, "maxItems", "noMax")
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("v.array(%s, %s, %s)", min, max, g.item(item, ctx, items)), nil
	}
	return "", fmt.Errorf("%s: type %q is not supported", n, t.str)
}

func (g *generator) item(rule, ctx string, n *node) string {
	if k, ok := g.items[rule]; ok {
		return k
	}
	k := "item" + camel(ctx)
	g.items[rule] = k
	g.itemOrder = append(g.itemOrder, itemKind{ident: k, rule: rule, source: n.String()})
	return k
}

// absPath reads {"type": "string", "pattern": "^/"} with its lengths.
func absPath(n *node) (min, max string, ok bool) {
	if n.only("type", "minLength", "maxLength", "pattern") != nil || n.get("type") == nil || n.get("type").str != "string" ||
		n.get("pattern") == nil || n.get("pattern").str != absPathPattern {
		return "", "", false
	}
	min, err := intKeyword(n, "minLength", "0")
	if err != nil {
		return "", "", false
	}
	max, err = intKeyword(n, "maxLength", "noMax")
	if err != nil {
		return "", "", false
	}
	return min, max, true
}

func intKeyword(n *node, key, absent string) (string, error) {
	v := n.get(key)
	if v == nil {
		return absent, nil
	}
	if v.kind != 'n' {
		return "", fmt.Errorf("%s: %s must be a number", n, key)
	}
	if _, err := strconv.ParseInt(string(v.num), 10, 64); err != nil {
		return "", fmt.Errorf("%s: %s must be an int64 written as one", n, key)
	}
	return string(v.num), nil
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

// recordOf returns the record of object schema n, narrowed by overlay
// (properties also described elsewhere, with key the narrowing's place).
func (g *generator) recordOf(n *node, name string, overlay *node, key string) (*record, error) {
	if key == "" {
		key = n.String()
	}
	if r := g.records[key]; r != nil {
		return r, nil
	}
	if err := n.only("$schema", "$id", "title", "$comment", "type", "required", "properties", "additionalProperties"); err != nil {
		return nil, err
	}
	if ap := n.get("additionalProperties"); ap == nil || ap.kind != 'b' || ap.b {
		return nil, fmt.Errorf("%s: additionalProperties must be false", n)
	}
	if t := n.get("type"); t == nil || t.str != "object" {
		return nil, fmt.Errorf("%s: a record needs type object", n)
	}
	for _, r := range g.records {
		if r.name == name {
			return nil, fmt.Errorf("%s: two records named %s", n, name)
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
		rule, err := g.conjunction(ss, p, kind{name: name})
		if err != nil {
			return nil, err
		}
		r.add(p).rules = []kindRule{{rule: rule}}
	}
	if overlay != nil {
		for _, p := range overlay.keys {
			if props.get(p) == nil {
				return nil, fmt.Errorf("%s: narrows %q, which %s does not have", overlay, p, n)
			}
		}
	}
	req, err := strs(n.get("required"))
	if err != nil {
		return nil, err
	}
	for _, p := range req {
		if props.get(p) == nil {
			return nil, fmt.Errorf("%s: requires %q, which it does not allow", n, p)
		}
	}
	r.required[""] = req
	return r, nil
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

func (r *record) mask(names []string) string {
	if len(names) == 0 {
		return "0"
	}
	idx := map[string]int{}
	for i, f := range r.fields {
		idx[f.name] = i
	}
	sorted := append([]string{}, names...)
	sort.Slice(sorted, func(i, j int) bool { return idx[sorted[i]] < idx[sorted[j]] })
	terms := make([]string, len(sorted))
	for i, n := range sorted {
		terms[i] = "1<<" + r.ident(n)
	}
	return strings.Join(terms, " | ")
}

var initialisms = map[string]string{"id": "ID", "pid": "PID", "pids": "PIDs", "ttl": "TTL", "uid": "UID", "v1": "V1"}

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

func (g *generator) emit() []byte {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	all := append([]*record{g.event}, g.order...)
	// Records with the same names share a lookup and the first one's fields.
	lookups := map[string]string{}
	var lookupOrder []*record
	for _, r := range all {
		if _, ok := lookups[r.names()]; !ok {
			lookups[r.names()] = r.name + "Lookup"
			lookupOrder = append(lookupOrder, r)
			r.exported = true
		}
	}
	p("// Code generated by schema/internal/gen from schema/*.json; DO NOT EDIT.\n\n")
	p("package schema\n\nimport (\n\t\"unsafe\"\n\n\t\"github.com/lockledger/lockledger/events\"\n)\n\n")
	for _, c := range g.consts {
		p("%s\n", c)
	}
	p("// kind is the schema a body is checked against: an event type, or the lock file.\ntype kind uint8\n\nconst (\n")
	for i, k := range g.kinds {
		if i == 0 {
			p("\t%s kind = iota // %s\n", k.ident, k.source)
		} else {
			p("\t%s // %s\n", k.ident, k.source)
		}
	}
	p(")\n\nfunc kindOf(t events.Type) (kind, bool) {\n\tswitch t {\n")
	for _, k := range g.kinds {
		p("\tcase %q:\n\t\treturn %s, true\n", k.name, k.ident)
	}
	p("\t}\n\treturn 0, false\n}\n\n")
	lock := g.records[g.files[lockFileFile].String()]
	p("// body checks the document's object.\nfunc (v *validator) body(k kind) *verr {\n")
	p("\tif k == %s {\n\t\treturn %s\n\t}\n", g.kinds[len(g.kinds)-1].ident, lock.call())
	p("\treturn v.record(&eventSchema, eventAllowed[k], eventRequired[k])\n}\n\n")

	p("type recordID uint8\n\nconst (\n")
	for i, r := range all {
		if i == 0 {
			p("\tr%s recordID = iota\n", camel(r.name))
		} else {
			p("\tr%s\n", camel(r.name))
		}
	}
	p(")\n\n")
	p("// lookup returns the index of a property in rs.names, or -1.\nfunc (rs *recordSchema) lookup(key []byte) int {\n\tswitch rs.id {\n")
	for _, lr := range lookupOrder {
		var ids []string
		for _, r := range all {
			if lookups[r.names()] == lr.name+"Lookup" {
				ids = append(ids, "r"+camel(r.name))
			}
		}
		p("\tcase %s:\n\t\treturn %sLookup(key)\n", strings.Join(ids, ", "), lr.name)
	}
	p("\t}\n\treturn -1\n}\n\n")
	p("func (rs *recordSchema) check(v *validator, f int) *verr {\n\tswitch rs.id {\n")
	for _, r := range all {
		p("\tcase r%s:\n\t\treturn check%sField(v, f)\n", camel(r.name), camel(r.name))
	}
	p("\t}\n\tpanic(\"schema: unknown record\")\n}\n\n")

	for _, r := range all {
		g.emitRecord(&b, r, lookups[r.names()] == r.name+"Lookup")
	}
	p("// The value lists of the enums.\nvar (\n")
	for _, e := range g.enumOrder {
		q := make([]string, len(e.values))
		for i, v := range e.values {
			q[i] = strconv.Quote(v)
		}
		p("\t%s = []string{%s}\n", e.name, strings.Join(q, ", "))
	}
	p(")\n\n")
	p("// itemKind is the items schema of an array.\ntype itemKind uint8\n\nconst (\n")
	for i, it := range g.itemOrder {
		if i == 0 {
			p("\t%s itemKind = iota // %s\n", it.ident, it.source)
		} else {
			p("\t%s // %s\n", it.ident, it.source)
		}
	}
	p(")\n\nfunc (v *validator) item(k itemKind) *verr {\n\tswitch k {\n")
	for _, it := range g.itemOrder {
		p("\tcase %s:\n\t\treturn %s\n", it.ident, it.rule)
	}
	p("\t}\n\tpanic(\"schema: unknown item kind\")\n}\n")
	return b.Bytes()
}

func (r *record) names() string {
	var s []string
	for _, f := range r.fields {
		s = append(s, f.name)
	}
	return strings.Join(s, ",")
}

func (g *generator) emitRecord(b *bytes.Buffer, r *record, ownLookup bool) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("// ---------------------------------------------------------------------\n// %s: %s\n\n", r.name, r.source)
	if r.exported {
		p("// %s is a property of %s.\ntype %s uint8\n\n", r.fieldType(), r.source, r.fieldType())
	}
	p("const (\n")
	for i, f := range r.fields {
		if i == 0 && r.exported {
			p("\t%s %s = iota\n", r.ident(f.name), r.fieldType())
		} else if i == 0 {
			p("\t%s = iota\n", r.ident(f.name))
		} else {
			p("\t%s\n", r.ident(f.name))
		}
	}
	n := "n" + camel(r.name) + "Fields"
	p("\t%s\n)\n\n// The field sets are bit masks of a uint64.\nvar _ [64 - %s]struct{}\n\n", n, n)
	p("var %sNames = []string{\n", r.name)
	for _, f := range r.fields {
		p("\t%s: %q,\n", r.ident(f.name), f.name)
	}
	p("}\n\n")
	if ownLookup {
		p("func %sLookup(k []byte) int {\n\tswitch string(k) {\n", r.name)
		for _, f := range r.fields {
			p("\tcase %q:\n\t\treturn int(%s)\n", f.name, r.ident(f.name))
		}
		p("\t}\n\treturn -1\n}\n\n")
		t := r.fieldType()
		p("// %sOf returns the field named key.\nfunc %sOf(key string) (%s, bool) {\n", t, t, t)
		p("\tf := %sLookup(unsafe.Slice(unsafe.StringData(key), len(key)))\n\treturn %s(f), f >= 0\n}\n\n", r.name, t)
		p("// String returns the field's name.\nfunc (f %s) String() string { return %sNames[f] }\n\n", t, r.name)
		p("// Num%ss is the number of %ss: they are 0 to Num%ss-1.\nconst Num%ss = int(n%sFields)\n\n", t, t, t, t, camel(r.name))
		if r == g.event {
			last := g.kinds[len(g.kinds)-1].ident
			p("// AllowedIn reports whether events of type t may carry the field.\nfunc (f %s) AllowedIn(t events.Type) bool {\n", t)
			p("\tk, ok := kindOf(t)\n\treturn ok && k != %s && eventAllowed[k]&(1<<f) != 0\n}\n\n", last)
			p("// RequiredIn reports whether events of type t must carry the field.\nfunc (f %s) RequiredIn(t events.Type) bool {\n", t)
			p("\tk, ok := kindOf(t)\n\treturn ok && k != %s && eventRequired[k]&(1<<f) != 0\n}\n\n", last)
		}
	}
	p("var %sSchema = recordSchema{id: r%s, names: %sNames, extra: %q, together: %s}\n\n", r.name, camel(r.name), r.name, r.extra, r.mask(r.together))
	if r == g.event {
		p("// The properties each event type allows (any other is refused by\n// unevaluatedProperties or a false schema) and requires.\n")
		p("var eventAllowed = [...]uint64{\n")
		for _, k := range g.kinds[:len(g.kinds)-1] {
			p("\t%s: %s,\n", k.ident, r.mask(r.allowed[k.ident]))
		}
		p("}\n\nvar eventRequired = [...]uint64{\n")
		for _, k := range g.kinds[:len(g.kinds)-1] {
			p("\t%s: %s,\n", k.ident, r.mask(r.required[k.ident]))
		}
		p("}\n\n")
	} else {
		all := make([]string, len(r.fields))
		for i, f := range r.fields {
			all[i] = f.name
		}
		p("const (\n\t%sAll = %s\n\t%sRequired = %s\n)\n\n", r.name, r.mask(all), r.name, r.mask(r.required[""]))
	}
	p("func check%sField(v *validator, f int) *verr {\n", camel(r.name))
	if r.exported {
		p("\tswitch %s(f) {\n", r.fieldType())
	} else {
		p("\tswitch f {\n")
	}
	for _, f := range r.fields {
		p("\tcase %s:\n", r.ident(f.name))
		if len(f.rules) == 1 {
			p("\t\treturn %s\n", f.rules[0].rule)
			continue
		}
		p("\t\tswitch v.k {\n")
		for _, kr := range f.rules[:len(f.rules)-1] {
			p("\t\tcase %s:\n\t\t\treturn %s\n", strings.Join(kr.kinds, ", "), kr.rule)
		}
		last := f.rules[len(f.rules)-1]
		p("\t\t}\n\t\treturn %s // %s\n", last.rule, strings.Join(last.kinds, ", "))
	}
	p("\t}\n\tpanic(\"schema: unhandled %s field\")\n}\n\n", r.name)
}
