package main

import (
	"slices"
	"testing"
)

func TestCountConfig(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{
			name: "fields of other modules' types count once, unexported ones not at all",
			files: map[string]string{"controller/config.go": `package controller
import "time"
type Config struct {
	Name        string
	Resync      time.Duration
	Handler     Handler
	handlerDone bool
}
type Handler interface{ Handle() error }
`},
			want: []string{"Config.Name", "Config.Resync", "Config.Handler"},
		},
		{
			name: "a struct of the library counts itself and its fields, named or inline, pointer or slice",
			files: map[string]string{"controller/config.go": `package controller
type Config struct {
	Leader  LeaderConfig
	Backoff *Backoff
	Hooks   []Hook
	Inline  struct{ A, B int }
}
type LeaderConfig struct{ Lease, Renew int }
type Backoff struct {
	Base int
	Max  Limit
}
type Limit struct{ Value int }
type Hook struct{ Name string }
`},
			want: []string{
				"Config.Leader", "Config.Leader.Lease", "Config.Leader.Renew",
				"Config.Backoff", "Config.Backoff.Base", "Config.Backoff.Max", "Config.Backoff.Max.Value",
				"Config.Hooks", "Config.Hooks.Name",
				"Config.Inline", "Config.Inline.A", "Config.Inline.B",
			},
		},
		{
			name: "a struct of another package of the library counts its fields, through an import alias",
			files: map[string]string{
				"controller/config.go": `package controller
import (
	le "example.com/lib/controller/leaderelection"
	"example.com/lib/log"
)
type Config struct {
	Leader le.Config
	Logger log.Logger
	Opts   log.Options
}
`,
				"controller/leaderelection/config.go": "package leaderelection\n\ntype Config struct{ Lease int }\n",
				"log/log.go":                          "package log\n\ntype Logger interface{ Info(string) }\n\ntype Options = options\n\ntype options struct{ Level int }\n",
			},
			want: []string{"Config.Leader", "Config.Leader.Lease", "Config.Logger", "Config.Opts", "Config.Opts.Level"},
		},
		{
			name: "an embedded struct counts as one field and its fields",
			files: map[string]string{"controller/config.go": `package controller
type Config struct {
	Common
	Name string
}
type Common struct{ Namespace string }
`},
			want: []string{"Config.Common", "Config.Common.Namespace", "Config.Name"},
		},
		{
			name: "a struct that refers to itself is expanded once",
			files: map[string]string{"controller/config.go": `package controller
type Config struct {
	Name string
	Next *Config
	Tree Node
}
type Node struct{ Children []Node }
`},
			want: []string{"Config.Name", "Config.Next", "Config.Tree", "Config.Tree.Children"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lib, err := countLibrary(libraryFS(tt.files))
			if err != nil {
				t.Fatal(err)
			}
			got, err := countConfig(lib, "controller", "Config")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCountConfigWithoutConfig(t *testing.T) {
	lib, err := countLibrary(libraryFS(map[string]string{"controller/a.go": "package controller\n\ntype Config int\n"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := countConfig(lib, "controller", "Config"); err == nil {
		t.Error("got no error for a Config that is no struct")
	}
	if _, err := countConfig(lib, "controller", "Missing"); err == nil {
		t.Error("got no error for a missing type")
	}
}
