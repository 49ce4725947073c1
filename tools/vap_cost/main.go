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
	"math"
	"os"
	"regexp"
	"runtime/debug"
	"sort"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"k8s.io/apimachinery/pkg/util/version"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"
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

type figure struct {
	Field string `json:"field"`
	Name  string `json:"name,omitempty"`
	// Refused: the API server's compiler returns an error, so `kubectl apply` is refused.
	Refused bool   `json:"refused"`
	Error   string `json:"error,omitempty"`
	Min     uint64 `json:"min"`
	Max     uint64 `json:"max"`
	// MaxWithVariables adds the estimates of the variables it reads, each once.
	MaxWithVariables uint64   `json:"max_with_variables"`
	Reads            []string `json:"reads,omitempty"`
	// ReadsObject: it reads `object` itself, or through the variables it reads.
	ReadsObject bool `json:"reads_object"`
	readsObject bool
}

type policyFigures struct {
	Name        string   `json:"name"`
	Refused     bool     `json:"refused"`
	Expressions []figure `json:"expressions"`
	// MaxEstimate: the largest max of one expression; TotalMaxEstimate: every expression's max
	// added up, what one evaluation of the policy may cost (messages only run on a failure).
	MaxEstimate      uint64 `json:"max_estimate"`
	TotalMaxEstimate uint64 `json:"total_max_estimate"`
	MinEstimate      uint64 `json:"total_min_estimate"`
}

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

var messageField = regexp.MustCompile(`messageExpression$`)

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

func judge(p policy) policyFigures {
	base := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion(), strictCost)
	composited, err := plugincel.NewCompositedCompiler(base)
	if err != nil {
		fail(err.Error())
	}
	stateless := plugincel.NewCompiler(base)
	decls := plugincel.OptionalVariableDeclarations{HasParams: len(p.Spec.ParamKind) > 0, HasAuthorizer: true, StrictCost: strictCost}
	// validation.go validateMessageExpression: params where the policy has a paramKind, no authorizer
	messageDecls := plugincel.OptionalVariableDeclarations{HasParams: decls.HasParams, HasAuthorizer: false, StrictCost: strictCost}
	withVars := estimator{env: envFor(composited.CompositionEnv.EnvSet, decls)}
	withoutVars := estimator{env: envFor(base, decls)}
	messages := estimator{env: envFor(composited.CompositionEnv.EnvSet, messageDecls)}

	out := policyFigures{Name: p.Metadata.Name}
	for i, m := range p.Spec.MatchConditions {
		e := &expression{name: m.Name, text: m.Expression, returns: []*cel.Type{cel.BoolType}}
		result := stateless.CompileCELExpression(e, decls, environment.NewExpressions)
		out.Expressions = append(out.Expressions, withoutVars.figure(fmt.Sprintf("spec.matchConditions[%d].expression", i), e, result))
	}
	own := map[string]figure{}
	for i, v := range p.Spec.Variables {
		e := &expression{name: v.Name, text: v.Expression, returns: []*cel.Type{cel.AnyType, cel.DynType}}
		// the variable's type joins the composition before the next one compiles, as the API server does
		withVars.env = envFor(composited.CompositionEnv.EnvSet, decls)
		result := composited.CompileAndStoreVariable(e, decls, environment.NewExpressions)
		f := withVars.figure(fmt.Sprintf("spec.variables[%d].expression", i), e, result)
		own[v.Name] = f
		out.Expressions = append(out.Expressions, f)
	}
	withVars.env = envFor(composited.CompositionEnv.EnvSet, decls)
	messages.env = envFor(composited.CompositionEnv.EnvSet, messageDecls)
	for i, v := range p.Spec.Validations {
		e := &expression{text: v.Expression, returns: []*cel.Type{cel.BoolType}}
		result := composited.CompileCELExpression(e, decls, environment.NewExpressions)
		out.Expressions = append(out.Expressions, withVars.figure(fmt.Sprintf("spec.validations[%d].expression", i), e, result))
		if v.MessageExpression != "" {
			m := &expression{text: v.MessageExpression, returns: []*cel.Type{cel.StringType}}
			result := composited.CompileCELExpression(m, messageDecls, environment.NewExpressions)
			out.Expressions = append(out.Expressions, messages.figure(fmt.Sprintf("spec.validations[%d].messageExpression", i), m, result))
		}
	}
	for i := range out.Expressions {
		f := &out.Expressions[i]
		f.ReadsObject = readsObject(*f, own, map[string]bool{f.Name: true})
		f.MaxWithVariables = addNoOverflow(f.Max, readsMax(f.Reads, own, map[string]bool{f.Name: true}))
		out.Refused = out.Refused || f.Refused
		if f.Max > out.MaxEstimate {
			out.MaxEstimate = f.Max
		}
		out.TotalMaxEstimate = addNoOverflow(out.TotalMaxEstimate, f.Max)
		if !isMessage(f.Field) {
			out.MinEstimate = addNoOverflow(out.MinEstimate, f.Min)
		}
	}
	return out
}

func isMessage(field string) bool {
	return messageField.MatchString(field)
}

// readsMax: the estimates of the variables `reads` names and of those they read, each once.
func readsMax(reads []string, own map[string]figure, seen map[string]bool) uint64 {
	var total uint64
	for _, name := range reads {
		if seen[name] {
			continue
		}
		seen[name] = true
		v := own[name]
		total = addNoOverflow(total, addNoOverflow(v.Max, readsMax(v.Reads, own, seen)))
	}
	return total
}

// readsObject: f names `object`, or a variable it reads (transitively) does.
func readsObject(f figure, own map[string]figure, seen map[string]bool) bool {
	if f.readsObject {
		return true
	}
	for _, name := range f.Reads {
		if !seen[name] {
			seen[name] = true
			if readsObject(own[name], own, seen) {
				return true
			}
		}
	}
	return false
}

func addNoOverflow(x, y uint64) uint64 {
	if x > math.MaxUint64-y {
		return math.MaxUint64
	}
	return x + y
}

// envFor: the environment CompileCELExpression builds for these declarations (plugin/cel/compile.go
// createEnvForOpts), so the checked AST the estimate reads is the API server's.
func envFor(set *environment.EnvSet, decls plugincel.OptionalVariableDeclarations) *cel.Env {
	requestType, namespaceType := plugincel.BuildRequestType(), plugincel.BuildNamespaceType()
	opts := []cel.EnvOption{
		cel.Variable(plugincel.ObjectVarName, cel.DynType),
		cel.Variable(plugincel.OldObjectVarName, cel.DynType),
		cel.Variable(plugincel.NamespaceVarName, namespaceType.CelType()),
		cel.Variable(plugincel.RequestVarName, requestType.CelType()),
	}
	if decls.HasParams {
		opts = append(opts, cel.Variable(plugincel.ParamsVarName, cel.DynType))
	}
	if decls.HasAuthorizer {
		opts = append(opts, cel.Variable(plugincel.AuthorizerVarName, library.AuthorizerType),
			cel.Variable(plugincel.RequestResourceAuthorizerVarName, library.ResourceCheckType))
	}
	extended, err := set.Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions:        opts,
		DeclTypes:         []*apiservercel.DeclType{namespaceType, requestType},
	})
	if err == nil && decls.StrictCost {
		extended, err = extended.Extend(environment.StrictCostOpt)
	}
	if err != nil {
		fail(err.Error())
	}
	env, err := extended.Env(environment.NewExpressions)
	if err != nil {
		fail(err.Error())
	}
	return env
}

type estimator struct{ env *cel.Env }

func (s estimator) figure(field string, e *expression, result plugincel.CompilationResult) figure {
	f := figure{Field: field, Name: e.name}
	if result.Error != nil {
		f.Refused, f.Error = true, result.Error.Error()
		return f
	}
	checked, issues := s.env.Compile(e.text)
	if issues != nil && issues.Err() != nil {
		fail(fmt.Sprintf("%s compiles for the API server but not for the estimate: %v", field, issues.Err()))
	}
	cost, err := s.env.EstimateCost(checked, &library.CostEstimator{})
	if err != nil {
		fail(fmt.Sprintf("%s: %v", field, err))
	}
	f.Min, f.Max = cost.Min, cost.Max
	f.Reads, f.readsObject = reads(checked)
	return f
}

// reads: the names of the policy's variables the expression selects (variables.NAME), and
// whether it names `object`.
func reads(checked *cel.Ast) ([]string, bool) {
	names := map[string]bool{}
	object := false
	ast.PostOrderVisit(checked.NativeRep().Expr(), ast.NewExprVisitor(func(e ast.Expr) {
		if e.Kind() == ast.IdentKind && e.AsIdent() == plugincel.ObjectVarName {
			object = true
		}
		if e.Kind() != ast.SelectKind {
			return
		}
		operand := e.AsSelect().Operand()
		if operand.Kind() == ast.IdentKind && operand.AsIdent() == plugincel.VariableVarName {
			names[e.AsSelect().FieldName()] = true
		}
	}))
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, object
}
