package child

import (
	"net/http"
	"net/url"
	"testing"
)

func TestMediaTypeKeepsWhatSaysProtobufOrJSONAndWhichView(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "-"},
		{"application/json", "json"},
		{"application/vnd.kubernetes.protobuf;stream=watch", "protobuf;stream=watch"},
		{"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList",
			"protobuf;as=PartialObjectMetadataList"},
	} {
		if got := mediaType(c.in); got != c.want {
			t.Errorf("got mediaType(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestDescribeNamesAStreamedListWatch(t *testing.T) {
	u, err := url.Parse("https://x/api/v1/pods?allowWatchBookmarks=true&resourceVersion=&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&timeoutSeconds=517&watch=true")
	if err != nil {
		t.Fatal(err)
	}
	req := &http.Request{Method: http.MethodGet, URL: u, Header: http.Header{"Accept": {"application/vnd.kubernetes.protobuf, */*"}}}
	want := "WATCH /api/v1/pods?sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan accept=protobuf"
	if got := describe(req); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
