package validation

import (
	"testing"

	k8svalidation "k8s.io/apimachinery/pkg/util/validation"
)

// isLabel must agree with apimachinery's IsDNS1123Label, which it replaces
// where allocating per entry would cost too much.
func FuzzIsLabelAgreesWithApimachinery(f *testing.F) {
	for _, s := range []string{"", "a", "shop", "shop-1", "-shop", "shop-", "Shop", "shop_1", "sh.op", "1", "a-b-c",
		"a23456789012345678901234567890123456789012345678901234567890123", "a234567890123456789012345678901234567890123456789012345678901234", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isLabel(s), len(k8svalidation.IsDNS1123Label(s)) == 0; got != want {
			t.Errorf("isLabel(%q) = %v, want %v as IsDNS1123Label says", s, got, want)
		}
	})
}
