package outbox_test

import (
	"os"
	"strings"
	"testing"

	"github.com/servicewright/servicewright/outbox"
)

// TestSchemaDocumented: docs/outbox.md shows the SQL that Schema returns for the
// default tables, so a migration copied from the page makes the tables Verify accepts.
func TestSchemaDocumented(t *testing.T) {
	raw, err := os.ReadFile("../docs/outbox.md")
	if err != nil {
		t.Fatal(err)
	}
	box, _ := outbox.New("T", "")
	in, _ := outbox.NewInbox("T", "")
	for _, sql := range []string{box.Schema(), in.Schema()} {
		if !strings.Contains(string(raw), sql) {
			t.Errorf("docs/outbox.md lacks\n%s", sql)
		}
	}
}
