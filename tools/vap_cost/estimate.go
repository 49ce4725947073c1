package main

// The compile-and-estimate pass: each expression compiled as validation.go compiles it at create,
// then estimated with the API server's estimator.

import (
	"fmt"
	"math"
	"regexp"
	"sort"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"k8s.io/apimachinery/pkg/util/version"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"
)

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

var messageField = regexp.MustCompile(`messageExpression$`)

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
