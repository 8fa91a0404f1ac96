package main

import (
	"fmt"
	"path"
)

// render returns every file of the operator, by path relative to the
// repository root (slash-separated): the Go formatted, the operator's names
// filled in everywhere.
func render(op operator) (map[string][]byte, error) {
	api := "apis/" + op.Short + "/v1alpha1/"
	ops := "operators/" + op.Name + "/"
	gofiles := map[string]*goFile{
		api + "doc.go":                           apiDoc(op),
		api + "register.go":                      apiRegister(op),
		api + "types.go":                         apiTypes(op),
		ops + "cmd/" + op.Name + "/main.go":      mainGo(op),
		ops + "cmd/" + op.Name + "/main_test.go": mainTestGo(op),
		ops + "internal/handler/handler.go":      handlerGo(op),
		ops + "internal/handler/handler_test.go": handlerTestGo(op),
		ops + "internal/operator/operator.go":    operatorGo(op),
		ops + "integration/doc.go":               integrationDocGo(op),
		ops + "integration/main_test.go":         integrationMainGo(op),
		ops + "integration/e2e_test.go":          integrationE2EGo(op),
		ops + "integration/rbac_test.go":         integrationRBACGo(op),
		ops + "integration/metrics_test.go":      integrationMetricsGo(op),
	}
	if len(op.Owns) > 0 {
		gofiles[ops+"internal/handler/children.go"] = childrenGo(op)
	}
	files := map[string][]byte{}
	for name, f := range gofiles {
		b, err := f.bytes()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		files[name] = b
	}
	r := op.replacer()
	files[ops+"README.md"] = []byte(reflowMarkdown(r.Replace(operatorREADME(op))))
	files[ops+"example.yaml"] = []byte(r.Replace(exampleYAML(op)))
	for dir, texts := range map[string]map[string]string{
		"manifests/rbac/" + op.Name: rbacFiles(op),
		"manifests/" + op.Name:      deployFiles(op),
	} {
		for name, text := range texts {
			text = r.Replace(text)
			if path.Ext(name) == ".md" {
				files[path.Join(dir, name)] = []byte(reflowMarkdown(text))
			} else {
				files[path.Join(dir, name)] = []byte(reflow(text))
			}
		}
	}
	return files, nil
}
