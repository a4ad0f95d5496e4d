package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// What kstatus must say of an object in each state the end-to-end suites recorded it in
// (tests/common/recording.rs: the state the object says it is in, by the operator's
// contract). kstatus reads observedGeneration, Reconciling, Stalled, then Ready.
var want = map[string]status.Status{
	"ready":       status.CurrentStatus,
	"progressing": status.InProgressStatus,
	"stalled":     status.FailedStatus,
	// Stalled with a retry scheduled: kstatus reads Reconciling first.
	"stalled-retrying": status.InProgressStatus,
	"deleting":         status.TerminatingStatus,
	// Paused: Ready keeps its last value, Reconciling and Stalled are False; kstatus
	// reads a Ready=False (or a generation not yet observed) as in progress.
	"paused":           status.CurrentStatus,
	"paused-not-ready": status.InProgressStatus,
}

// The states every run must have recorded, of some kind.
var required = []string{"ready", "progressing", "stalled", "deleting"}

// recorded is one object the suites recorded, in the state it said it was in.
type recorded struct {
	state, kind, file string
}

// recordings lists GPUCLOUD_RECORDINGS/STATE/KIND/*.json.
func recordings(t *testing.T) []recorded {
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
	var out []recorded
	for _, f := range files {
		kindDir := filepath.Dir(f)
		out = append(out, recorded{
			state: filepath.Base(filepath.Dir(kindDir)),
			kind:  filepath.Base(kindDir),
			file:  f,
		})
	}
	return out
}

// kinds are the kinds of deploy/crds, the ones the operator serves.
func kinds(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../../deploy/crds/gpucloud.io.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if k, ok := strings.CutPrefix(line, "    kind: "); ok {
			out = append(out, strings.TrimSpace(k))
		}
	}
	if len(out) == 0 {
		t.Fatal("no kind found in deploy/crds/gpucloud.io.yaml")
	}
	return out
}

func load(t *testing.T, file string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := objects(data)
	if err != nil || len(objs) != 1 {
		t.Fatalf("%s: want one object, got %d (%v)", file, len(objs), err)
	}
	return objs[0]
}

// Every object the suites recorded gets the status its state promises, from kstatus
// itself: the status Flux, Config Sync and kpt show. Every kind is recorded, and every
// state the contract names is reached by some kind.
func TestRecordings(t *testing.T) {
	counts := map[string]map[string]int{}
	for _, r := range recordings(t) {
		expected, known := want[r.state]
		if !known {
			t.Errorf("%s: unknown state %q", r.file, r.state)
			continue
		}
		res, err := Compute(load(t, r.file))
		if err != nil {
			t.Errorf("%s: %v", r.file, err)
			continue
		}
		if res.Status != expected {
			t.Errorf("%s: recorded %s, kstatus says %s (%s), want %s",
				r.file, r.state, res.Status, res.Message, expected)
		}
		if counts[r.kind] == nil {
			counts[r.kind] = map[string]int{}
		}
		counts[r.kind][r.state]++
	}
	states := map[string]int{}
	for _, kind := range kinds(t) {
		if len(counts[kind]) == 0 {
			t.Errorf("no %s was recorded: its suites record nothing", kind)
		}
		t.Logf("%-20s %v", kind, counts[kind])
		for s, n := range counts[kind] {
			states[s] += n
		}
	}
	for _, s := range required {
		if states[s] == 0 {
			t.Errorf("no object of any kind was recorded %s", s)
		}
	}
}

// A recorded Ready object, for the edge cases below.
func readyObject(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	for _, r := range recordings(t) {
		if r.state == "ready" {
			return load(t, r.file)
		}
	}
	t.Fatal("no ready object was recorded")
	return nil
}

// The operator's first reconcile of an object that is not Ready yet: kstatus must say
// InProgress, not Failed, when Ready=False comes with Reconciling=True.
func TestFirstReadyFalseIsInProgress(t *testing.T) {
	u := readyObject(t)
	conds, _, _ := unstructuredConditions(u.Object)
	for _, c := range conds {
		switch c["type"] {
		case "Ready", "Stalled":
			c["status"] = "False"
		case "Reconciling":
			c["status"] = "True"
		}
	}
	res, err := Compute(u)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != status.InProgressStatus {
		t.Fatalf("got %s (%s)", res.Status, res.Message)
	}
}

func unstructuredConditions(obj map[string]interface{}) ([]map[string]interface{}, bool, error) {
	st, _ := obj["status"].(map[string]interface{})
	list, _ := st["conditions"].([]interface{})
	var out []map[string]interface{}
	for _, c := range list {
		if m, ok := c.(map[string]interface{}); ok {
			out = append(out, m)
		}
	}
	return out, len(out) > 0, nil
}
