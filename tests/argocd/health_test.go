// Runs deploy/argocd/health.lua in gopher-lua, the Lua interpreter Argo CD itself embeds,
// on the objects the operator wrote (tests/kstatus/testdata, captured by
// tests/kstatus/capture.sh), the way Argo CD does: `obj` is the object as a Lua table and
// the script returns {status, message}.
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
const fixtures = "../kstatus/testdata"

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

func load(t *testing.T, name string) map[string]interface{} {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixtures, name))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]interface{}{}
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestHealth(t *testing.T) {
	src, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ file, status, message string }{
		{"current.yaml", "Healthy", ""},
		{"reconciling.yaml", "Progressing", "does not exist yet"},
		{"generation-behind.yaml", "Progressing", "generation 2"},
		{"never-reconciled.yaml", "Progressing", "Waiting for the operator"},
		{"stalled.yaml", "Degraded", "missing-secret named by credentialsSecretRef does not exist"},
		{"paused.yaml", "Suspended", "gpucloud.io/paused"},
		// Held by the finalizer while the platform resource is removed.
		{"terminating.yaml", "Progressing", "Being deleted"},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		seen[c.file] = true
		t.Run(c.file, func(t *testing.T) {
			status, message := health(t, string(src), load(t, c.file))
			if status != c.status || !strings.Contains(message, c.message) {
				t.Fatalf("got %s (%q), want %s containing %q", status, message, c.status, c.message)
			}
			t.Logf("%s: %s (%s)", c.file, status, message)
		})
	}
	files, _ := filepath.Glob(filepath.Join(fixtures, "*.yaml"))
	for _, f := range files {
		if !seen[filepath.Base(f)] {
			t.Errorf("%s has no expected health in this test", f)
		}
	}
}

// Stalled wins over Ready (kept from before) and over Reconciling; a Ready=False without
// Reconciling (e.g. a kept Ready=False while paused is lifted) is still Progressing.
func TestHealthEdges(t *testing.T) {
	src, _ := os.ReadFile(script)
	obj := load(t, "current.yaml")
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
