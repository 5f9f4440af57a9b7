package hostentry_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svclab/svclab/internal/deploy/hostentry"
	"github.com/svclab/svclab/internal/runtime"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// TestLoadConfig: a host reads its config from the file it is given (the
// kube deployer's ConfigMap), else from the environment (the local
// deployer's children), and says nothing is there when neither is.
func TestLoadConfig(t *testing.T) {
	enc, err := runtime.EncodeHostConfig(&hostv1.HostConfig{Group: "from-env"})
	if err != nil {
		t.Fatal(err)
	}
	fileEnc, err := runtime.EncodeHostConfig(&hostv1.HostConfig{Group: "from-file"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "host.json")
	if err := os.WriteFile(good, fileEnc, 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, env, path string
		setEnv          bool
		wantGroup       string // "" with no config
		wantErr         string
	}{
		{name: "neither"},
		{name: "env", env: string(enc), setEnv: true, wantGroup: "from-env"},
		{name: "file beats env", env: string(enc), setEnv: true, path: good, wantGroup: "from-file"},
		{name: "missing file", path: filepath.Join(dir, "none.json"), wantErr: "host config: open"},
		{name: "bad file", path: bad, wantErr: "host config"},
		{name: "bad env", env: "{", setEnv: true, wantErr: "host config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setEnv {
				t.Setenv(runtime.HostConfigEnv, tc.env)
			} else {
				t.Setenv(runtime.HostConfigEnv, "")
				os.Unsetenv(runtime.HostConfigEnv)
			}
			cfg, err := hostentry.LoadConfig(tc.path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.GetGroup(); got != tc.wantGroup {
				t.Errorf("group %q, want %q", got, tc.wantGroup)
			}
			if tc.wantGroup == "" && cfg != nil {
				t.Errorf("config %v, want none", cfg)
			}
		})
	}
}
