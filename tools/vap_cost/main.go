// Command vap_cost judges the ValidatingAdmissionPolicies `h3doctor export vap` prints with the
// Kubernetes API server's own code (k8s.io/apiserver): it compiles every CEL expression as the API
// server does when such a policy is created or updated, and estimates each one's cost with the
// estimator the API server uses. It prints JSON (docs/kubernetes.md, "Cost and size").
//
// What the API server refuses at create/update is an expression that does not compile:
// kubernetes pkg/apis/admissionregistration/validation/validation.go
// (validateValidatingAdmissionPolicySpec) compiles the match conditions with the stateless
// compiler, the variables in order with the composited one (each sees the variables before it),
// then every validation and message expression with it, under the environment
// environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion(), StrictCostEnforcementForVAP).
// It compares no estimated cost with a limit for this kind (a CRD's x-kubernetes-validations are
// estimated; a policy is not): its cost limits act at run time, celconfig.PerCallLimit per
// expression and celconfig.RuntimeCELCostBudget per evaluation of a policy, where a variable's cost
// is charged once, to the first expression that reads it (plugin/cel/composition.go,
// activation.go). The figures here follow that: an expression's own estimate, and with the
// variables it reads (each once, transitively).
//
// With -objects FILE it also runs each policy on each object of FILE as the API server's validator
// does (policy/validating/validator.go: the validations under celconfig.RuntimeCELCostBudget, then
// every message expression under what is left) and prints the cost spent and the messages.
//
// Usage: vap_cost [-objects FILE] [POLICIES]   (YAML or JSON, several documents; standard input
// without POLICIES)
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/google/cel-go/cel"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// StrictCostEnforcementForVAP is on (GA) from Kubernetes 1.32, the release of k8s.io/apiserver v0.32.
const strictCost = true

type policy struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		ParamKind       json.RawMessage `json:"paramKind"`
		MatchConditions []struct {
			Name       string `json:"name"`
			Expression string `json:"expression"`
		} `json:"matchConditions"`
		Variables []struct {
			Name       string `json:"name"`
			Expression string `json:"expression"`
		} `json:"variables"`
		Validations []struct {
			Expression        string `json:"expression"`
			MessageExpression string `json:"messageExpression"`
		} `json:"validations"`
	} `json:"spec"`
}

// The expressions as the API server's compiler sees them (validating.Variable,
// validating.ValidationCondition, validating.MessageExpressionCondition, matchconditions.MatchCondition).
type expression struct {
	name, text string
	returns    []*cel.Type
}

func (e *expression) GetExpression() string    { return e.text }
func (e *expression) ReturnTypes() []*cel.Type { return e.returns }
func (e *expression) GetName() string          { return e.name }

type report struct {
	Modules              map[string]string `json:"modules"`
	PerCallLimit         uint64            `json:"per_call_limit"`
	RuntimeCELCostBudget uint64            `json:"runtime_cel_cost_budget"`
	// EstimateComparedAtCreate: whether the API server compares an estimate with a limit when a
	// ValidatingAdmissionPolicy is created or updated (it does not, in the release built here).
	EstimateComparedAtCreate bool            `json:"estimate_compared_at_create"`
	Policies                 []policyFigures `json:"policies"`
	Runs                     []run           `json:"runs,omitempty"`
}

func main() {
	objectsFile := flag.String("objects", "", "run the policies on the objects of this file")
	flag.Parse()
	in := io.Reader(os.Stdin)
	if flag.NArg() > 1 {
		fail("usage: vap_cost [-objects FILE] [POLICIES]")
	}
	if flag.NArg() == 1 {
		in = open(flag.Arg(0))
	}
	var documents []map[string]any
	if err := decodeAll(in, &documents); err != nil {
		fail(err.Error())
	}
	policies := []policy{}
	for _, d := range documents {
		if d["kind"] == "ValidatingAdmissionPolicy" {
			var p policy
			if err := recode(d, &p); err != nil {
				fail(err.Error())
			}
			policies = append(policies, p)
		}
	}
	out := report{
		Modules:              modules(),
		PerCallLimit:         celconfig.PerCallLimit,
		RuntimeCELCostBudget: celconfig.RuntimeCELCostBudget,
	}
	for _, p := range policies {
		out.Policies = append(out.Policies, judge(p))
	}
	if *objectsFile != "" {
		var objects []map[string]any
		if err := decodeAll(open(*objectsFile), &objects); err != nil {
			fail(err.Error())
		}
		for _, p := range policies {
			v := compileValidator(p)
			for _, o := range objects {
				if kind, _ := o["kind"].(string); resources[kind] != "" { // what the policy matches
					out.Runs = append(out.Runs, v.evaluate(o))
				}
			}
		}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fail(err.Error())
	}
}

func fail(message string) {
	fmt.Fprintln(os.Stderr, "vap_cost:", message)
	os.Exit(2)
}

func open(name string) io.Reader {
	f, err := os.Open(name)
	if err != nil {
		fail(err.Error())
	}
	return f
}

// decodeAll: every document of a YAML or JSON stream (an empty document is skipped).
func decodeAll(in io.Reader, out *[]map[string]any) error {
	decoder := utilyaml.NewYAMLOrJSONDecoder(in, 1<<16)
	for {
		var d map[string]any
		err := decoder.Decode(&d)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if d != nil {
			*out = append(*out, d)
		}
	}
}

func recode(from any, to any) error {
	data, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, to)
}

// modules: the versions of the API server's code this binary was built with.
func modules() map[string]string {
	out := map[string]string{}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return out
	}
	for _, m := range info.Deps {
		switch m.Path {
		case "k8s.io/apiserver", "github.com/google/cel-go", "k8s.io/apimachinery":
			out[m.Path] = m.Version
		}
	}
	return out
}
