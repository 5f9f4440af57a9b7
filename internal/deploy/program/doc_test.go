package program

import (
	"os"
	"strings"
	"testing"
)

// TestDocExcerpt: docs/YOUR-SYSTEM.md shows testdata/system/spec.toml as
// the exec app's example and says it is that file: its first toml block
// after the section's heading is the file, byte for byte.
func TestDocExcerpt(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/YOUR-SYSTEM.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/system/spec.toml")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Any program as a component\n")
	if !ok {
		t.Fatal(`docs/YOUR-SYSTEM.md has no "## Any program as a component" section`)
	}
	_, block, ok := strings.Cut(section, "```toml\n")
	if !ok {
		t.Fatal("the section has no toml block")
	}
	block, _, _ = strings.Cut(block, "```\n")
	if block != string(want) {
		t.Errorf("docs/YOUR-SYSTEM.md's exec example differs from testdata/system/spec.toml, which it says it is:\n--- doc\n%s--- file\n%s", block, want)
	}
}
