package hooks

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// The settings file belongs to the user: their key order, indentation,
// line endings and other hooks must survive us. So it is never decoded
// into a map and re-encoded; it is located (node has the byte offsets of
// every value) and edited as text, one splice at a time.

type kind int

const (
	kObject kind = iota
	kArray
	kString
	kOther // number, true, false, null
)

// node is one JSON value and where it sits in the source.
type node struct {
	kind       kind
	start, end int // [start, end) of the value itself
	// members of an object, in source order.
	members []member
	// elems of an array.
	elems []*node
	// str is a string's decoded value.
	str string
}

type member struct {
	key      string
	keyStart int // offset of the key's opening quote
	val      *node
}

// get returns an object's member by key (the last one wins, like the
// CLI's JSON.parse).
func (n *node) get(key string) (int, *node) {
	if n == nil || n.kind != kObject {
		return -1, nil
	}
	for i := len(n.members) - 1; i >= 0; i-- {
		if n.members[i].key == key {
			return i, n.members[i].val
		}
	}
	return -1, nil
}

// parse locates every value of a document already known to be valid JSON.
func parse(src []byte) (*node, error) {
	if !json.Valid(src) {
		return nil, fmt.Errorf("not valid JSON")
	}
	p := &parser{src: src}
	n := p.value()
	return n, nil
}

type parser struct {
	src []byte
	i   int
}

func (p *parser) ws() {
	for p.i < len(p.src) {
		switch p.src[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// value parses the value at p.i (input is valid JSON, so no error paths).
func (p *parser) value() *node {
	p.ws()
	n := &node{start: p.i}
	switch p.src[p.i] {
	case '{':
		n.kind = kObject
		p.i++
		for {
			p.ws()
			if p.src[p.i] == '}' {
				p.i++
				break
			}
			if p.src[p.i] == ',' {
				p.i++
				p.ws()
			}
			ks := p.i
			key := p.string()
			p.ws()
			p.i++ // ':'
			n.members = append(n.members, member{key: key.str, keyStart: ks, val: p.value()})
			p.ws()
		}
	case '[':
		n.kind = kArray
		p.i++
		for {
			p.ws()
			if p.src[p.i] == ']' {
				p.i++
				break
			}
			if p.src[p.i] == ',' {
				p.i++
			}
			n.elems = append(n.elems, p.value())
			p.ws()
		}
	case '"':
		s := p.string()
		return s
	default:
		n.kind = kOther
		for p.i < len(p.src) {
			c := p.src[p.i]
			if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				break
			}
			p.i++
		}
	}
	n.end = p.i
	return n
}

func (p *parser) string() *node {
	n := &node{kind: kString, start: p.i}
	p.i++
	for p.src[p.i] != '"' {
		if p.src[p.i] == '\\' {
			p.i++
		}
		p.i++
	}
	p.i++
	n.end = p.i
	if s, err := strconv.Unquote(string(p.src[n.start:n.end])); err == nil {
		n.str = s
	} else {
		// JSON escapes strconv does not know (\/): let encoding/json say.
		_ = json.Unmarshal(p.src[n.start:n.end], &n.str)
	}
	return n
}

// splice replaces src[from:to] with text.
func splice(src []byte, from, to int, text string) []byte {
	out := make([]byte, 0, len(src)-(to-from)+len(text))
	out = append(out, src[:from]...)
	out = append(out, text...)
	return append(out, src[to:]...)
}

// itemBounds returns the start and end of item i of a container (an
// object member starts at its key).
func itemBounds(c *node, i int) (int, int) {
	if c.kind == kObject {
		return c.members[i].keyStart, c.members[i].val.end
	}
	return c.elems[i].start, c.elems[i].end
}

func itemCount(c *node) int {
	if c.kind == kObject {
		return len(c.members)
	}
	return len(c.elems)
}

// removeItem deletes item i of container c. It is the exact inverse of
// appendItem: removing the last item deletes from the end of the one
// before it (the comma and separator appendItem wrote); removing the only
// item deletes from just after the opening bracket.
func removeItem(src []byte, c *node, i int) []byte {
	n := itemCount(c)
	s, e := itemBounds(c, i)
	switch {
	case i > 0:
		_, prevEnd := itemBounds(c, i-1)
		return splice(src, prevEnd, e, "")
	case n > 1:
		next, _ := itemBounds(c, 1)
		return splice(src, s, next, "")
	default:
		return splice(src, c.start+1, e, "")
	}
}

// appendItem adds text (a member `"k": v` or an element) as the last item
// of container c, separated the way the container's items already are.
func appendItem(src []byte, c *node, text string, f format, depth int) []byte {
	n := itemCount(c)
	if n == 0 {
		inner := src[c.start+1 : c.end-1]
		if len(inner) == 0 {
			// An empty `{}` or `[]` stays on one line. The space sets it
			// apart from a container install created (`[X]`), which
			// uninstall removes with its last item.
			return splice(src, c.start+1, c.start+1, " "+text)
		}
		return splice(src, c.start+1, c.start+1, f.nl+f.indent(depth+1)+text)
	}
	_, lastEnd := itemBounds(c, n-1)
	var sep string
	if n > 1 {
		_, prevEnd := itemBounds(c, n-2)
		lastStart, _ := itemBounds(c, n-1)
		// The separator between the last two items, minus its comma.
		sep = trimComma(string(src[prevEnd:lastStart]))
	} else {
		first, _ := itemBounds(c, 0)
		sep = string(src[c.start+1 : first])
	}
	return splice(src, lastEnd, lastEnd, ","+sep+text)
}

func trimComma(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == ',' {
			return s[:i] + s[i+1:]
		}
	}
	return s
}

// format is how the file is laid out: its line ending and indent unit.
type format struct {
	nl, unit string
}

func (f format) indent(depth int) string {
	s := ""
	for range depth {
		s += f.unit
	}
	return s
}

// detectFormat reads the line ending and the indent unit off the file.
func detectFormat(src []byte) format {
	f := format{nl: "\n", unit: "  "}
	for i := 0; i+1 < len(src); i++ {
		if src[i] == '\r' && src[i+1] == '\n' {
			f.nl = "\r\n"
			break
		}
	}
	// The first indented line gives the unit.
	for i := 0; i < len(src); i++ {
		if src[i] != '\n' {
			continue
		}
		j := i + 1
		for j < len(src) && (src[j] == ' ' || src[j] == '\t') {
			j++
		}
		if j > i+1 {
			f.unit = string(src[i+1 : j])
			break
		}
	}
	return f
}
