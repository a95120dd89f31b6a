// Command kstatus prints what kstatus (sigs.k8s.io/cli-utils/pkg/kstatus/status, the
// library behind Flux's Kustomization `wait` and Helm 4's `--wait`) computes for each
// object read as JSON on stdin (one object, or a List): a line "STATUS<TAB>MESSAGE"
// per object. The cluster tests run it on the live objects the operator wrote.
package main

import (
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

func main() {
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("reading stdin: %v", err)
	}
	// As client-go decodes: whole numbers are int64 (kstatus reads generations so).
	var object unstructured.Unstructured
	if err := json.Unmarshal(data, &object.Object); err != nil {
		fail("stdin is not a JSON object: %v", err)
	}
	objects := []unstructured.Unstructured{object}
	if object.IsList() {
		list, err := object.ToList()
		if err != nil {
			fail("reading the list: %v", err)
		}
		objects = list.Items
	}
	for i := range objects {
		result, err := status.Compute(&objects[i])
		if err != nil {
			fail("computing the status of %s: %v", objects[i].GetName(), err)
		}
		fmt.Printf("%s\t%s\n", result.Status, result.Message)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "kstatus: "+format+"\n", args...)
	os.Exit(2)
}
