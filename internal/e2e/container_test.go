package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/testport"
	"github.com/kifpool/kifpool/internal/testwait"
)

// TestContainerImage builds the FROM scratch image with `make image`
// (Debian's buildah, no daemon; storage of the test's own, vfs driver),
// checks what is in it (the static binary, CA certificates, tzdata, a
// data folder for the unprivileged user) and its configuration, then
// starts the binary on the image's own file system and serves a page.
// The binary is started with chroot as the image's user, not by a
// container runtime: these machines allow no namespaces (`buildah run`
// fails), and what the test proves — the binary runs from the image alone,
// with nothing of the host — needs only the file system.
func TestContainerImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an image")
	}
	buildah := needTool(t, "buildah", "buildah")
	chroot := needTool(t, "chroot", "coreutils")
	if os.Geteuid() != 0 {
		t.Skip("starting the binary on the image's file system needs root (chroot); CI runs as root")
	}
	root := repoRoot(t)
	dir := t.TempDir()
	storageConf := filepath.Join(dir, "storage.conf")
	if err := os.WriteFile(storageConf, []byte("[storage]\ndriver = \"vfs\"\ngraphroot = \""+filepath.Join(dir, "graph")+
		"\"\nrunroot = \""+filepath.Join(dir, "run")+"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "CONTAINERS_STORAGE_CONF="+storageConf, "BUILDAH_ISOLATION=chroot")
	image := "localhost/kifpool-e2e:test"
	makeCmd := exec.Command("make", "image", "IMAGE="+image) // #nosec G204 -- the test's own arguments
	makeCmd.Dir, makeCmd.Env = root, env
	if out, err := makeCmd.CombinedOutput(); err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	bh := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(buildah, args...) // #nosec G204 -- the test's own arguments
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("buildah %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	var info struct {
		OCIv1 struct {
			Config struct {
				User       string
				Entrypoint []string
				Cmd        []string
				Env        []string
			} `json:"config"`
		}
	}
	if err := json.Unmarshal([]byte(bh("inspect", "--type", "image", image)), &info); err != nil {
		t.Fatal(err)
	}
	cfg := info.OCIv1.Config
	if cfg.User != "65534:65534" || strings.Join(cfg.Entrypoint, " ") != "/kifpool" || strings.Join(cfg.Cmd, " ") != "serve" {
		t.Errorf("image config: user %q entrypoint %v cmd %v", cfg.User, cfg.Entrypoint, cfg.Cmd)
	}
	ctr := bh("from", image)
	t.Cleanup(func() { bh("rm", ctr) })
	fsRoot := bh("mount", ctr)
	t.Cleanup(func() { bh("umount", ctr) })
	entries, err := os.ReadDir(fsRoot)
	if err != nil {
		t.Fatal(err)
	}
	var top []string
	for _, e := range entries {
		top = append(top, e.Name())
	}
	if strings.Join(top, " ") != "data etc kifpool usr" {
		t.Errorf("the image holds %v, want data etc kifpool usr (FROM scratch, nothing else)", top)
	}
	for _, f := range []string{"kifpool", "etc/ssl/certs/ca-certificates.crt", "usr/share/zoneinfo/Asia/Tehran", "usr/share/zoneinfo/UTC"} {
		if fi, err := os.Stat(filepath.Join(fsRoot, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s in the image: %v", f, err)
		}
	}
	// Started as the image's user on the image's file system: SQLite under
	// /data, the built-in sandbox bank, a page served.
	addr := testport.Addr(t)
	cmd := exec.Command(chroot, "--userspec=65534:65534", fsRoot, "/kifpool", "serve") // #nosec G204 -- the test's own arguments
	cmd.Env = []string{"DATA_DIR=/data", "ZONEINFO=/usr/share/zoneinfo", "LISTEN_ADDR=" + addr, "TZ=Asia/Tehran"}
	logPath := filepath.Join(dir, "serve.log")
	logf, err := os.Create(logPath) // #nosec G304 -- the test's own file
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	setChildAttrs(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	var lastErr error
	if err := testwait.Until(time.Minute, "the image's binary to serve /signin", func() bool {
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath) // #nosec G304 -- the test's own file
			t.Fatalf("the image's binary exited:\n%s", b)
		default:
		}
		res, err := http.Get("http://" + addr + routes.SignIn)
		if lastErr = err; err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}); err != nil {
		b, _ := os.ReadFile(logPath) // #nosec G304 -- the test's own file
		t.Fatalf("%v (last: %v)\n%s", err, lastErr, b)
	}
	if _, err := os.Stat(filepath.Join(fsRoot, "data", "kifpool.db")); err != nil {
		t.Errorf("no database under the image's /data: %v", err)
	}
}
