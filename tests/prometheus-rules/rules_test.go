// The operator's alerts parsed and validated by Prometheus's own rule loader
// (github.com/prometheus/prometheus/model/rulefmt, pinned in go.mod): both copies, the
// kustomize component's PrometheusRule (its spec.groups) and the Helm chart's rule file.
// The Grafana dashboard's expressions go through the same PromQL parser, with Grafana's
// variables replaced by values of their kind.
package rules

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

const (
	kustomizeRule = "../../deploy/components/prometheusrule/prometheusrule.yaml"
	helmRuleFile  = "../../deploy/helm/gpucloud-operator/files/prometheus-rules.yaml"
	dashboards    = "../../deploy/grafana/*.json"
)

var promql = parser.NewParser(parser.Options{})

// parse runs rulefmt over a Prometheus rule file's content, unknown fields refused.
func parse(t *testing.T, content []byte) (*rulefmt.RuleGroups, []error) {
	t.Helper()
	return rulefmt.Parse(content, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
}

// specOf is the spec of the PrometheusRule at path: a rule file's content.
func specOf(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var object struct {
		Kind string    `yaml:"kind"`
		Spec yaml.Node `yaml:"spec"`
	}
	if err := yaml.Unmarshal(raw, &object); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if object.Kind != "PrometheusRule" {
		t.Fatalf("%s: kind %q, want PrometheusRule", path, object.Kind)
	}
	spec, err := yaml.Marshal(&object.Spec)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

func check(t *testing.T, name string, content []byte) *rulefmt.RuleGroups {
	t.Helper()
	groups, errs := parse(t, content)
	for _, err := range errs {
		t.Errorf("%s: %v", name, err)
	}
	if groups == nil || len(groups.Groups) == 0 {
		t.Fatalf("%s: no rule groups", name)
	}
	rules := 0
	for _, g := range groups.Groups {
		rules += len(g.Rules)
	}
	t.Logf("%s: %d groups, %d rules valid", name, len(groups.Groups), rules)
	return groups
}

func TestTheKustomizePrometheusRuleIsValid(t *testing.T) {
	check(t, kustomizeRule, specOf(t, kustomizeRule))
}

func TestTheHelmRuleFileIsValid(t *testing.T) {
	raw, err := os.ReadFile(helmRuleFile)
	if err != nil {
		t.Fatal(err)
	}
	check(t, helmRuleFile, raw)
}

// Extra rule files to check, for a one-off: RULE_FILES="a.yaml b.yaml" tests/prometheus-rules/run.sh
func TestRuleFilesNamedInTheEnvironment(t *testing.T) {
	files := strings.Fields(os.Getenv("RULE_FILES"))
	if len(files) == 0 {
		t.Skip("RULE_FILES is empty")
	}
	for _, f := range files {
		_, errs := rulefmt.ParseFile(f, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
		for _, err := range errs {
			t.Errorf("%v", err)
		}
	}
}

// The checker itself: a broken expression, an unknown field and a bad duration are refused.
func TestTheCheckerRefusesBrokenRules(t *testing.T) {
	good := specOf(t, kustomizeRule)
	for _, broken := range []struct{ name, old, new string }{
		{"unclosed call", "max by (kind) (gpucloud_stalled_objects) > 0", "max by (kind) (gpucloud_stalled_objects > 0"},
		{"unknown function", "absent(gpucloud_leader)", "absent_forever(gpucloud_leader)"},
		{"bad duration", "for: 15m", "for: 15 minutes"},
		{"unknown field", "for: 1h", "for: 1h\n        keep_firing: 5m"},
		{"bad template", "{{ $labels.kind }} object(s)", "{{ $labels.kind object(s)"},
	} {
		text := strings.Replace(string(good), broken.old, broken.new, 1)
		if text == string(good) {
			t.Fatalf("%s: %q is not in the rules any more", broken.name, broken.old)
		}
		if _, errs := parse(t, []byte(text)); len(errs) == 0 {
			t.Errorf("%s: accepted", broken.name)
		}
	}
}

// What Grafana puts in place of its variables before the query reaches Prometheus.
var grafanaVariables = strings.NewReplacer(
	"$__rate_interval", "5m",
	"$__interval", "1m",
	"$__range", "6h",
	"${namespace}", ".*",
	"$namespace", ".*",
)

func TestTheDashboardQueriesParse(t *testing.T) {
	files, err := filepath.Glob(dashboards)
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards at %s (%v)", dashboards, err)
	}
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var dashboard struct {
			Panels []struct {
				Title   string `json:"title"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
		}
		if err := json.Unmarshal(raw, &dashboard); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		queries := 0
		for _, panel := range dashboard.Panels {
			for _, target := range panel.Targets {
				expr := grafanaVariables.Replace(target.Expr)
				if strings.Contains(expr, "$") {
					t.Errorf("%s, %q: a variable this test does not know: %s", file, panel.Title, target.Expr)
					continue
				}
				if _, err := promql.ParseExpr(expr); err != nil {
					t.Errorf("%s, %q: %v\n    %s", file, panel.Title, err, expr)
				}
				queries++
			}
		}
		t.Logf("%s: %d queries parse", file, queries)
	}
}
