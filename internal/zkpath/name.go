package zkpath

import (
	"errors"
	"fmt"
	"strings"

	"github.com/zkalloc/zkalloc/rebalance"
)

// ErrInvalid is wrapped by the errors of [ValidateRoot].
var ErrInvalid = errors.New("zkpath: invalid")

// ValidateRoot accepts an absolute ZooKeeper path of node names that
// [rebalance.ValidateName] accepts, without a trailing slash, outside
// ZooKeeper's own /zookeeper tree.
func ValidateRoot(root string) error {
	if !strings.HasPrefix(root, "/") || root == "/" || strings.HasSuffix(root, "/") {
		return fmt.Errorf("%w root: want an absolute path such as /zkalloc, without a trailing '/'", ErrInvalid)
	}
	for _, part := range strings.Split(root[1:], "/") {
		if err := rebalance.ValidateName(part); err != nil {
			return fmt.Errorf("%w root: %w", ErrInvalid, err)
		}
	}
	if root == "/zookeeper" || strings.HasPrefix(root, "/zookeeper/") {
		return fmt.Errorf("%w root: reserved by ZooKeeper", ErrInvalid)
	}
	return nil
}
