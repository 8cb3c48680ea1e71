package members

import (
	"fmt"

	"github.com/zkalloc/zkalloc/membership"
)

// describe renders a member node's data for an error message, cut to its
// first 64 bytes if it is not an Info.
func describe(data []byte) string {
	i, ok := membership.ParseInfo(data)
	if !ok || i.Host == "" {
		if len(data) > 64 {
			return fmt.Sprintf("data %q... (%d bytes)", data[:64], len(data))
		}
		return fmt.Sprintf("data %q", data)
	}
	return fmt.Sprintf("host %s, pid %d, started %s", i.Host, i.PID, i.Started)
}
