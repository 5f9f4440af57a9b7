package spec

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// EchoLimit is how many characters of a value an error repeats; a longer
// value is cut, with its full length stated, so that a 10 MB mistake
// does not become a 10 MB error.
const EchoLimit = 80

// Echo renders a value as an error message repeats it: strings quoted and
// cut to EchoLimit characters, numbers as TOML writes them (nan, inf),
// tables and lists by what they are.
func Echo(v any) string {
	switch x := v.(type) {
	case string:
		return quoteShort(x)
	case float64:
		switch {
		case math.IsNaN(x):
			return "nan"
		case math.IsInf(x, 1):
			return "inf"
		case math.IsInf(x, -1):
			return "-inf"
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	case map[string]any:
		return "a table"
	case []any:
		return "a list"
	case nil:
		return "nothing"
	}
	return cut(fmt.Sprint(v))
}

// quoteShort quotes s, cut to EchoLimit characters.
func quoteShort(s string) string {
	n := utf8.RuneCountInString(s)
	if n <= EchoLimit {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s… (%d characters)", strconv.Quote(runePrefix(s, EchoLimit)), n)
}

// cut shortens text longer than EchoLimit characters to that many, an
// ellipsis and the full length.
func cut(text string) string {
	n := utf8.RuneCountInString(text)
	if n <= EchoLimit {
		return text
	}
	return fmt.Sprintf("%s… (%d characters)", runePrefix(text, EchoLimit), n)
}

// runePrefix is the first n characters of s.
func runePrefix(s string, n int) string {
	i := 0
	for ; n > 0 && i < len(s); n-- {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}

// shortenQuoted cuts every quoted string in an error message that is
// longer than EchoLimit, so that a value an owner echoed with %q stays
// readable whoever formatted it.
func shortenQuoted(msg string) string {
	if len(msg) <= EchoLimit {
		return msg
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(msg, '"')
		if i < 0 {
			break
		}
		q, err := strconv.QuotedPrefix(msg[i:])
		if err != nil {
			b.WriteString(msg[:i+1])
			msg = msg[i+1:]
			continue
		}
		b.WriteString(msg[:i])
		if u, err := strconv.Unquote(q); err == nil && utf8.RuneCountInString(u) > EchoLimit {
			b.WriteString(quoteShort(u))
		} else {
			b.WriteString(q)
		}
		msg = msg[i+len(q):]
	}
	b.WriteString(msg)
	return bound(b.String())
}

// bound cuts a whole message at a generous length: a message is several
// echoed values at most, but an owner may have echoed one unquoted.
func bound(msg string) string {
	const limit = 50 * EchoLimit
	if utf8.RuneCountInString(msg) <= limit {
		return msg
	}
	return runePrefix(msg, limit) + "…"
}
