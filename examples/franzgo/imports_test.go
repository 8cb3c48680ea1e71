package franzgo_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The example and its test can be copied into a user's module: they
// import no internal package of zkalloc (zkserver, for the test's
// ZooKeeper, is public).
func TestImportsNoInternalPackage(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-f",
		`{{range .Imports}}{{.}} {{end}}{{range .TestImports}}{{.}} {{end}}{{range .XTestImports}}{{.}} {{end}}`,
		"./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, imp := range strings.Fields(string(out)) {
		if strings.HasPrefix(imp, "github.com/zkalloc/zkalloc/") && strings.Contains(imp, "/internal/") {
			t.Errorf("examples/franzgo imports %s, an internal package: a user cannot copy it", imp)
		}
	}
}
