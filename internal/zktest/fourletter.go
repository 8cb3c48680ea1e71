package zktest

import (
	"context"

	"github.com/zkalloc/zkalloc/internal/zklaunch"
)

// FourLetter sends ZooKeeper's four-letter admin word to the server at
// addr and returns its whole reply, as [zklaunch.FourLetter] does; the
// servers of this package enable every word. It is here so that a test
// needs only this package.
func FourLetter(ctx context.Context, addr, word string) (string, error) {
	return zklaunch.FourLetter(ctx, addr, word)
}
