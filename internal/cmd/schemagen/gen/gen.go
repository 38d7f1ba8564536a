// Package gen writes schema/fields_gen.go from the schema files: the
// kinds of document, the fields of every object the schemas describe, the
// fields each event type allows and requires, and the rule that checks
// each field, as calls to the hand-written rules of package schema. It
// refuses any keyword or shape of schema it has no rule for, so that a
// schema change the validator cannot follow fails here, not in production.
package gen

import (
	"fmt"
	"go/format"
	"io/fs"
	"slices"
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
	g, err := load(fsys)
	if err != nil {
		return nil, err
	}
	return gofmt(g.emit())
}

// load reads and checks the schema files (*.json) in fsys.
func load(fsys fs.FS) (*generator, error) {
	g := &generator{files: map[string]*node{}, records: map[string]*record{}}
	names, err := fs.Glob(fsys, "*.json")
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		if g.files[name], err = parse(name, b); err != nil {
			return nil, err
		}
	}
	if err := g.build(); err != nil {
		return nil, err
	}
	return g, nil
}

func gofmt(src []byte) ([]byte, error) {
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
	first   map[string]*record // by names(): the one that exports those fields

	enums  []enumVar
	items  []itemKind
	consts []string
	owner  string // the event type or record whose rules are being made
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
	name string // Go identifier stem
	// exported: its fields are a type of package schema (<Name>Field),
	// for decoders; a record that shares another's fields is not.
	exported bool
	source   string
	extra    string // the keyword that refuses other properties
	fields   []*field
	byName   map[string]*field
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
	// Records with the same names share the first one's lookup and fields.
	g.first = map[string]*record{}
	for _, r := range append([]*record{g.event}, g.order...) {
		if g.first[r.names()] == nil {
			g.first[r.names()], r.exported = r, true
		}
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
	} else if !slices.Equal(g.event.together, together) {
		return fmt.Errorf("%s: dependentRequired differs from the other event types'", root)
	}
	forbidden := map[string]bool{}
	g.owner = k.name
	for _, name := range names {
		ss := subs[name]
		if slices.ContainsFunc(ss, func(s *node) bool { return s.kind == 'b' && !s.b }) {
			forbidden[name] = true
			continue
		}
		rule, err := g.conjunction(ss, name)
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
	set := slices.Sorted(slices.Values(dr.keys))
	for _, k := range dr.keys {
		req, err := strs(dr.vals[k])
		if err != nil {
			return nil, err
		}
		others := slices.DeleteFunc(slices.Clone(set), func(s string) bool { return s == k })
		if slices.Sort(req); !slices.Equal(req, others) {
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
