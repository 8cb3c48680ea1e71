package zkalloc

import (
	"fmt"

	"github.com/zkalloc/zkalloc/internal/zkservers"
)

// parseServers checks Config.Servers and returns the addresses to dial and
// the chroot they carry (see [zkservers.Parse]); its errors wrap
// [ErrInvalidConfig].
func parseServers(servers []string) (addrs []string, chroot string, err error) {
	addrs, chroot, err = zkservers.Parse(servers)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return addrs, chroot, nil
}
