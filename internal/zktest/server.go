package zktest

import (
	"context"
	"errors"

	"github.com/zkalloc/zkalloc/internal/zklaunch"
)

// StartServer starts a standalone server with the launcher's
// [zklaunch.StartServer], on the settings of opts, which it checks first;
// it refuses [Options.QuorumProxies]. See [zklaunch.StartServer] for what
// it waits for and what its errors wrap. The caller must Close the
// returned Server; tests use [Standalone], which does.
func StartServer(ctx context.Context, opts Options) (*zklaunch.Server, error) {
	st, err := opts.validate()
	if err != nil {
		return nil, err
	}
	if st.proxies {
		return nil, errors.New("zktest: Options.QuorumProxies true: a standalone server has no quorum links")
	}
	return zklaunch.StartServer(ctx, zklaunch.Options{
		Config:     st.config("", 0, nil),
		Dir:        st.dir,
		Log:        st.log,
		DefaultJVM: st.defaultJVM,
	})
}
