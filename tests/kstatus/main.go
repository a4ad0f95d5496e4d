// Command kstatus prints the kstatus status (sigs.k8s.io/cli-utils/pkg/kstatus/status) of
// each object in the YAML files it is given, one line per object:
//
//	tests/kstatus/run.sh status FILE.yaml...   (or: cd tests/kstatus && go run . FILE.yaml...)
//	KIND/NAME STATUS MESSAGE
//
// Exit status 1 when a file cannot be read or an object cannot be computed.
package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/yaml"
)

// objects reads every document of a YAML stream (or a v1 List) as unstructured objects.
func objects(data []byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, doc := range bytes.Split(data, []byte("\n---")) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, err
		}
		if string(bytes.TrimSpace(js)) == "null" {
			continue
		}
		// UnmarshalJSON keeps integers as int64, as kstatus expects.
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			return nil, err
		}
		if u.IsList() {
			list, err := u.ToList()
			if err != nil {
				return nil, err
			}
			for i := range list.Items {
				out = append(out, &list.Items[i])
			}
			continue
		}
		out = append(out, u)
	}
	return out, nil
}

// Compute is kstatus's verdict on one object.
func Compute(u *unstructured.Unstructured) (*status.Result, error) {
	return status.Compute(u)
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kstatus FILE.yaml... (- for stdin)")
		os.Exit(2)
	}
	failed := false
	for _, path := range os.Args[1:] {
		var data []byte
		var err error
		if path == "-" {
			data, err = readAll(os.Stdin)
		} else {
			data, err = os.ReadFile(path)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			failed = true
			continue
		}
		objs, err := objects(data)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
			failed = true
			continue
		}
		for _, u := range objs {
			res, err := Compute(u)
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s/%s: %v\n", u.GetKind(), u.GetName(), err)
				failed = true
				continue
			}
			fmt.Printf("%s/%s %s %s\n", u.GetKind(), u.GetName(), res.Status, strings.ReplaceAll(res.Message, "\n", " "))
		}
	}
	if failed {
		os.Exit(1)
	}
}

func readAll(f *os.File) ([]byte, error) {
	var buf bytes.Buffer
	_, err := buf.ReadFrom(f)
	return buf.Bytes(), err
}
