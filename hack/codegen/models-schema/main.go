// Command models-schema prints the OpenAPI v2 definitions of the types in
// apis/ (and the apimachinery types they use) as JSON, from the generated
// apis/client/openapi. hack/codegen/generate.sh passes its output to
// applyconfiguration-gen, which embeds the schema in
// apis/client/applyconfiguration/internal: server-side apply in the fake
// clientset (NewClientset) and the Extract functions read it to know which
// lists are sets or maps and which fields are atomic.
//
// k8s.io/sample-apiserver generates its apply configurations the same way.
// Run it from the repository root:
//
//	go run ./hack/codegen/models-schema >schema.json
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/kooperkit/kooper/apis/client/openapi"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "models-schema:", err)
		os.Exit(1)
	}
}

func run() error {
	ref := func(name string) spec.Ref { return spec.MustCreateRef("#/definitions/" + name) }
	defs := openapi.GetOpenAPIDefinitions(ref)
	schemas := make(map[string]spec.Schema, len(defs))
	for name, def := range defs {
		// A type whose v3 schema differs from its v2 one carries the v2 one
		// in an extension: applyconfiguration-gen reads OpenAPI v2.
		if v2, ok := def.Schema.Extensions[common.ExtensionV2Schema].(spec.Schema); ok {
			schemas[name] = v2
			continue
		}
		schemas[name] = def.Schema
	}
	data, err := json.Marshal(&spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Swagger:     "2.0",
		Info:        &spec.Info{InfoProps: spec.InfoProps{Title: "kooper", Version: "unversioned"}},
		Definitions: schemas,
	}})
	if err != nil {
		return fmt.Errorf("could not encode the definitions: %w", err)
	}
	if _, err := os.Stdout.Write(data); err != nil {
		return fmt.Errorf("could not write the definitions: %w", err)
	}
	return nil
}
