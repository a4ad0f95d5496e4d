package main

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// Each fixture in testdata/ was written by the operator itself (see capture.sh): the
// status kstatus computes for it is the status Flux, Config Sync and kpt show.
func TestFixtures(t *testing.T) {
	cases := []struct {
		file string
		want status.Status
	}{
		{"current.yaml", status.CurrentStatus},              // Ready=True at the observed generation
		{"reconciling.yaml", status.InProgressStatus},       // Reconciling=True (waiting for a dependency)
		{"generation-behind.yaml", status.InProgressStatus}, // spec changed, not yet observed
		// Never reconciled: the CRD's status default (observedGeneration 0) makes the
		// generation read as not yet observed, so kstatus says InProgress from the moment
		// the object exists (without it, kstatus calls an object with no status Current).
		{"never-reconciled.yaml", status.InProgressStatus},
		{"stalled.yaml", status.FailedStatus},          // Stalled=True
		{"terminating.yaml", status.TerminatingStatus}, // deletionTimestamp, held by the finalizer
		// Paused: Ready keeps its last value, Reconciling and Stalled are False.
		{"paused.yaml", status.CurrentStatus},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		seen[c.file] = true
		t.Run(c.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			objs, err := objects(data)
			if err != nil || len(objs) != 1 {
				t.Fatalf("want one object, got %d (%v)", len(objs), err)
			}
			res, err := Compute(objs[0])
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != c.want {
				t.Fatalf("%s: kstatus says %s (%s), want %s", c.file, res.Status, res.Message, c.want)
			}
			t.Logf("%s: %s (%s)", c.file, res.Status, res.Message)
		})
	}
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, f := range files {
		if !seen[filepath.Base(f)] {
			t.Errorf("%s has no expected status in this test", f)
		}
	}
}

// The operator's first reconcile of an object that is not Ready yet: kstatus must say
// InProgress, not Failed, when Ready=False comes with Reconciling=True.
func TestFirstReadyFalseIsInProgress(t *testing.T) {
	data, err := os.ReadFile("testdata/current.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, _ := objects(data)
	u := objs[0]
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
