package zklaunch

import (
	"errors"
	"path/filepath"
	"testing"
)

func TestClasspathOverride(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		env     string
		wantErr bool
	}{
		{env: dir, wantErr: false},
		{env: dir + string(filepath.ListSeparator) + filepath.Join(dir, "*"), wantErr: false},
		{env: filepath.Join(dir, "missing.jar"), wantErr: true},
	}
	for _, tt := range tests {
		t.Setenv(ClasspathEnv, tt.env)
		got, err := Classpath()
		if tt.wantErr {
			if !errors.Is(err, ErrNotInstalled) {
				t.Errorf("Classpath() with %s=%q: error %v, want ErrNotInstalled", ClasspathEnv, tt.env, err)
			}
			continue
		}
		if err != nil || got != tt.env {
			t.Errorf("Classpath() with %s=%q = %q, %v; want it unchanged", ClasspathEnv, tt.env, got, err)
		}
	}
}
