package main

import (
	"maps"
	"testing"
)

func TestReversed(t *testing.T) {
	tests := map[string]string{
		"github.com/shopco/shop":     "com.github.shopco.shop",
		"example.com/acme/platform":  "com.example.acme.platform",
		"acme.example.org":           "org.example.acme",
		"git.corp.example/team/op-x": "example.corp.git.team.op-x",
	}
	for in, want := range tests {
		if got := reversed(in); got != want {
			t.Errorf("reversed(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestApply(t *testing.T) {
	rules := renameRules("example.org/old/mod", "example.com/acme/platform", "old.example", "acme.example.com", "ghcr.io/old", "registry.acme.example.com/platform")
	tests := []struct {
		name, in, want string
		counts         map[string]int
	}{
		{
			name:   "imports and go.mod lines",
			in:     "module example.org/old/mod\n\nimport \"example.org/old/mod/apis/shop/v1\"\nreplace example.org/old/mod => ../\n",
			want:   "module example.com/acme/platform\n\nimport \"example.com/acme/platform/apis/shop/v1\"\nreplace example.com/acme/platform => ../\n",
			counts: map[string]int{"module path": 3},
		},
		{
			name:   "a URL and the end of a sentence",
			in:     "See https://example.org/old/mod. Or example.org/old/mod/docs.",
			want:   "See https://example.com/acme/platform. Or example.com/acme/platform/docs.",
			counts: map[string]int{"module path": 2},
		},
		{
			name:   "after an escape sequence of a string literal",
			in:     `"ok  \texample.org/old/mod/hack\t0.05s"`,
			want:   `"ok  \texample.com/acme/platform/hack\t0.05s"`,
			counts: map[string]int{"module path": 1},
		},
		{
			name:   "a longer path or another module is not this module",
			in:     "example.org/old/module example.org/old/mod-x sub.example.org/old/mod",
			want:   "example.org/old/module example.org/old/mod-x sub.example.org/old/mod",
			counts: nil,
		},
		{
			name:   "the OpenAPI model package",
			in:     "// +k8s:openapi-model-package=org.example.old.mod.apis.shop.v1\n",
			want:   "// +k8s:openapi-model-package=com.example.acme.platform.apis.shop.v1\n",
			counts: map[string]int{"module path in OpenAPI's form": 1},
		},
		{
			name:   "API groups, the suffix alone, and names on them",
			in:     "group: shop.old.example\n`old.example` shop.old.example/owner\n",
			want:   "group: shop.acme.example.com\n`acme.example.com` shop.acme.example.com/owner\n",
			counts: map[string]int{"API group suffix": 3},
		},
		{
			name:   "a longer domain is not the suffix",
			in:     "shop.old.example.net notold.example old.examples",
			want:   "shop.old.example.net notold.example old.examples",
			counts: nil,
		},
		{
			name:   "escaped in a regular expression, once and twice",
			in:     "`^apiVersion: \\S+\\.old\\.example/` and \"sharding\\\\.old\\\\.example/slots\"",
			want:   "`^apiVersion: \\S+\\.acme\\.example\\.com/` and \"sharding\\\\.acme\\\\.example\\\\.com/slots\"",
			counts: map[string]int{`API group suffix, escaped (\.)`: 1, `API group suffix, escaped twice (\\.)`: 1},
		},
		{
			name:   "images and the registry variable",
			in:     "IMAGE_REGISTRY ?= ghcr.io/old\nimage: ghcr.io/old/shop:latest\nnot: ghcr.io/older/shop\n",
			want:   "IMAGE_REGISTRY ?= registry.acme.example.com/platform\nimage: registry.acme.example.com/platform/shop:latest\nnot: ghcr.io/older/shop\n",
			counts: map[string]int{"image registry": 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, counts := apply(tt.in, rules)
			if got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
			if !maps.Equal(counts, tt.counts) {
				t.Errorf("got counts %v, want %v", counts, tt.counts)
			}
		})
	}
}
