package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// problem is one reason the API server would refuse a CRD, or a document
// that could not be read.
type problem struct {
	File string // File holds the document, relative to the directory checked.
	CRD  string // CRD is the document's metadata.name; empty if unknown.
	Msg  string // Msg is the API server's message.
}

func (p problem) String() string {
	if p.CRD == "" {
		return p.File + ": " + p.Msg
	}
	return p.File + ": " + p.CRD + ": " + p.Msg
}

// result is what checking a directory found.
type result struct {
	CRDs     int // CRD documents checked, refused or not
	Problems []problem
}

// checkDir validates every CustomResourceDefinition of the YAML files under
// dir, as kubectl apply -k sends them: with the patches the kustomization
// beside them lists (a conversion webhook, say) applied, and the patches
// themselves not checked as CRDs. Its error is about reading the
// directory; what the API server would refuse is in the result.
func checkDir(ctx context.Context, dir string) (result, error) {
	v := newValidator()
	var res result
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !isYAML(path) {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return fmt.Errorf("could not name %s relative to %s: %w", path, dir, err)
		}
		patches, err := patchesBeside(path)
		if err != nil {
			return err
		}
		if _, isPatch := patches[filepath.Base(path)]; isPatch {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("could not read %s: %w", path, err)
		}
		v.patches = patches
		crds, problems := v.checkFile(ctx, data)
		res.CRDs += crds
		for _, p := range problems {
			p.File = rel
			res.Problems = append(res.Problems, p)
		}
		return nil
	})
	if err != nil {
		return result{}, fmt.Errorf("could not walk %s: %w", dir, err)
	}
	return res, nil
}

// validator decodes CRDs as the API server does (defaulted, converted to
// the internal version, unknown and duplicate fields refused) and validates
// them as it does on create.
type validator struct {
	decoder runtime.Decoder
	// patches are the strategic merge patches of the file's kustomization,
	// by file name, applied to the CRD each names.
	patches map[string][]byte
}

func newValidator() *validator {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	// Strict, as kubectl asks by default (--validate=strict: the server's
	// fieldValidation=Strict).
	codecs := serializer.NewCodecFactory(scheme, serializer.EnableStrict)
	return &validator{decoder: codecs.UniversalDecoder(apiextensions.SchemeGroupVersion)}
}

// checkFile validates the CRD documents of a YAML file and returns how many
// there were and the problems of all its documents (File left empty).
func (v *validator) checkFile(ctx context.Context, data []byte) (int, []problem) {
	var (
		crds     int
		problems []problem
	)
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return crds, problems
		}
		if err != nil {
			return crds, append(problems, problem{Msg: fmt.Sprintf("could not split the YAML documents: %v", err)})
		}
		var head metav1.PartialObjectMetadata
		if err := yaml.Unmarshal(doc, &head); err != nil {
			problems = append(problems, problem{Msg: fmt.Sprintf("could not read a YAML document: %v", err)})
			continue
		}
		if head.Kind != "CustomResourceDefinition" {
			continue
		}
		crds++
		doc, err = v.patch(head.Name, doc)
		if err != nil {
			problems = append(problems, problem{CRD: head.Name, Msg: err.Error()})
			continue
		}
		problems = append(problems, v.check(ctx, head, doc)...)
	}
}

// check validates one CRD document whose type and metadata are head.
func (v *validator) check(ctx context.Context, head metav1.PartialObjectMetadata, doc []byte) []problem {
	refused := func(msg string) problem { return problem{CRD: head.Name, Msg: msg} }
	// The API server serves no other version of CRDs since Kubernetes 1.22,
	// but the scheme still converts v1beta1.
	if want := apiextensionsv1.SchemeGroupVersion.String(); head.APIVersion != want {
		return []problem{refused(fmt.Sprintf("apiVersion %q is not served, want %q", head.APIVersion, want))}
	}

	var problems []problem
	obj, _, err := v.decoder.Decode(doc, nil, nil)
	if err != nil {
		// A strict decoding error comes with the decoded object, which is
		// validated too; any other error leaves nothing to validate.
		problems = append(problems, refused(err.Error()))
		if !runtime.IsStrictDecodingError(err) || obj == nil {
			return problems
		}
	}
	crd, ok := obj.(*apiextensions.CustomResourceDefinition)
	if !ok {
		return append(problems, refused(fmt.Sprintf("decoded a %T, want a CustomResourceDefinition", obj)))
	}
	prepareForCreate(crd)
	for _, e := range validation.ValidateCustomResourceDefinition(ctx, crd) {
		problems = append(problems, refused(e.Error()))
	}
	return problems
}

// prepareForCreate does to crd what the API server does before it
// validates a create (the CRD registry strategy's PrepareForCreate, whose
// package would bring the whole storage layer): the status is the server's
// to write, and records the version marked storage as stored, which the
// validation requires. Its other step, dropping the fields of disabled
// feature gates, changes nothing under the default gates.
func prepareForCreate(crd *apiextensions.CustomResourceDefinition) {
	crd.Status = apiextensions.CustomResourceDefinitionStatus{}
	crd.Generation = 1
	for _, ver := range crd.Spec.Versions {
		if ver.Storage {
			crd.Status.StoredVersions = []string{ver.Name}
			break
		}
	}
}

// patchesBeside reads the patches the kustomization.yaml beside path
// lists (patches: - path: FILE), by file name; none without one.
func patchesBeside(path string) (map[string][]byte, error) {
	dir := filepath.Dir(path)
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("could not read the kustomization beside %s: %w", path, err)
	}
	var k struct {
		Patches []struct {
			Path string `json:"path"`
		} `json:"patches"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		return nil, fmt.Errorf("could not read the kustomization beside %s: %w", path, err)
	}
	patches := map[string][]byte{}
	for _, p := range k.Patches {
		b, err := os.ReadFile(filepath.Join(dir, p.Path))
		if err != nil {
			return nil, fmt.Errorf("could not read the patch %s: %w", p.Path, err)
		}
		if patches[p.Path], err = yaml.YAMLToJSON(b); err != nil {
			return nil, fmt.Errorf("could not read the patch %s: %w", p.Path, err)
		}
	}
	return patches, nil
}

// patch applies to doc, the CRD name, the patches that name it, as
// kustomize does: a strategic merge patch of a CustomResourceDefinition.
func (v *validator) patch(name string, doc []byte) ([]byte, error) {
	if len(v.patches) == 0 {
		return doc, nil
	}
	out, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	for file, p := range v.patches {
		var head metav1.PartialObjectMetadata
		if err := json.Unmarshal(p, &head); err != nil || head.Name != name {
			continue
		}
		if out, err = strategicpatch.StrategicMergePatch(out, p, apiextensionsv1.CustomResourceDefinition{}); err != nil {
			return nil, fmt.Errorf("could not apply the patch %s: %w", file, err)
		}
	}
	return out, nil
}

// isYAML reports whether path names a YAML file.
func isYAML(path string) bool {
	ext := strings.ToLower(filepath.Ext(path))
	return ext == ".yaml" || ext == ".yml"
}
