// Runs deploy/argocd/health.lua in gopher-lua, the Lua interpreter Argo CD itself embeds,
// on the objects the operator wrote, as the end-to-end suites recorded them in this run
// (GPUCLOUD_RECORDINGS, see tests/common/recording.rs), the way Argo CD does: `obj` is the
// object as a Lua table and the script returns {status, message}.
package argocd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
	"sigs.k8s.io/yaml"
)

const script = "../../deploy/argocd/health.lua"

func toLua(L *lua.LState, v interface{}) lua.LValue {
	switch x := v.(type) {
	case nil:
		return lua.LNil
	case bool:
		return lua.LBool(x)
	case float64:
		return lua.LNumber(x)
	case string:
		return lua.LString(x)
	case []interface{}:
		t := L.NewTable()
		for _, e := range x {
			t.Append(toLua(L, e))
		}
		return t
	case map[string]interface{}:
		t := L.NewTable()
		for k, e := range x {
			t.RawSetString(k, toLua(L, e))
		}
		return t
	}
	panic("unexpected value")
}

func health(t *testing.T, src string, obj map[string]interface{}) (string, string) {
	t.Helper()
	L := lua.NewState()
	defer L.Close()
	L.SetGlobal("obj", toLua(L, obj))
	if err := L.DoString(src); err != nil {
		t.Fatalf("health.lua failed: %v", err)
	}
	ret, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatalf("health.lua returned %s, not a table", L.Get(-1).Type())
	}
	return ret.RawGetString("status").String(), ret.RawGetString("message").String()
}

func load(t *testing.T, file string) map[string]interface{} {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]interface{}{}
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// recordings lists GPUCLOUD_RECORDINGS/STATE/KIND/*.json by state.
func recordings(t *testing.T) map[string][]string {
	t.Helper()
	dir := os.Getenv("GPUCLOUD_RECORDINGS")
	if dir == "" {
		t.Fatal("GPUCLOUD_RECORDINGS is not set: it names the directory the end-to-end " +
			"suites recorded the operator's objects in (scripts/test.sh sets both)")
	}
	files, err := filepath.Glob(filepath.Join(dir, "*", "*", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recordings under %s (%v)", dir, err)
	}
	out := map[string][]string{}
	for _, f := range files {
		state := filepath.Base(filepath.Dir(filepath.Dir(f)))
		out[state] = append(out[state], f)
	}
	return out
}

// What Argo CD must show of an object in each state the suites recorded it in, and a
// part of the message.
var want = map[string]struct{ status, message string }{
	"ready":       {"Healthy", ""},
	"progressing": {"Progressing", ""},
	"stalled":     {"Degraded", ""},
	// Stalled wins over Reconciling: the retry needs a change outside the operator.
	"stalled-retrying": {"Degraded", ""},
	// Held by the finalizer while the platform resource is removed.
	"deleting": {"Progressing", "Being deleted"},
	// The annotation wins, Ready or not, observed or not.
	"paused":           {"Suspended", "gpucloud.io/paused"},
	"paused-not-ready": {"Suspended", "gpucloud.io/paused"},
}

func TestHealth(t *testing.T) {
	src, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	for state, files := range recordings(t) {
		w, known := want[state]
		if !known {
			t.Errorf("unknown state %q", state)
			continue
		}
		for _, f := range files {
			status, message := health(t, string(src), load(t, f))
			if status != w.status || !strings.Contains(message, w.message) {
				t.Errorf("%s: recorded %s, Argo CD says %s (%q), want %s containing %q",
					f, state, status, message, w.status, w.message)
			}
		}
		t.Logf("%s: %d objects", state, len(files))
	}
	for _, state := range []string{"ready", "progressing", "stalled", "deleting"} {
		if len(recordings(t)[state]) == 0 {
			t.Errorf("no object was recorded %s", state)
		}
	}
}

// Stalled wins over Ready (kept from before) and over Reconciling; a Ready=False without
// Reconciling (e.g. a kept Ready=False while paused is lifted) is still Progressing.
func TestHealthEdges(t *testing.T) {
	src, _ := os.ReadFile(script)
	ready := recordings(t)["ready"]
	if len(ready) == 0 {
		t.Fatal("no ready object was recorded")
	}
	obj := load(t, ready[0])
	conds := obj["status"].(map[string]interface{})["conditions"].([]interface{})
	set := func(kind, value string) {
		for _, c := range conds {
			if m := c.(map[string]interface{}); m["type"] == kind {
				m["status"] = value
				m["message"] = kind + " is " + value
			}
		}
	}
	set("Stalled", "True")
	set("Reconciling", "True")
	if s, m := health(t, string(src), obj); s != "Degraded" || m != "Stalled is True" {
		t.Fatalf("got %s %q", s, m)
	}
	set("Stalled", "False")
	set("Reconciling", "False")
	set("Ready", "False")
	if s, _ := health(t, string(src), obj); s != "Progressing" {
		t.Fatalf("got %s", s)
	}
	obj["metadata"].(map[string]interface{})["annotations"] = map[string]interface{}{"gpucloud.io/paused": "false"}
	set("Ready", "True")
	if s, _ := health(t, string(src), obj); s != "Healthy" {
		t.Fatalf("got %s", s)
	}
}

// The argocd-cm snippet carries health.lua, unchanged, under each of its keys (one per
// kind: tests/manifests.rs checks that every registered kind has one).
func TestSnippetMatchesScript(t *testing.T) {
	src, _ := os.ReadFile(script)
	data, err := os.ReadFile("../../deploy/argocd/argocd-cm-snippet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(data, &cm); err != nil {
		t.Fatal(err)
	}
	if len(cm.Data) == 0 {
		t.Fatal("the snippet has no keys")
	}
	for key, script := range cm.Data {
		if script != string(src) {
			t.Errorf("%s differs from deploy/argocd/health.lua", key)
		}
	}
}
