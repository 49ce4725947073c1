package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
)

// run: one policy on one object, as the API server's validator runs it.
type run struct {
	Policy string `json:"policy"`
	Object string `json:"object"`
	// Cost: what the validations (with the variables they read) and then the message
	// expressions spent of the policy's runtime budget; -1 when it ran out.
	ValidationsCost int64 `json:"validations_cost"`
	Cost            int64 `json:"cost"`
	// Errors: an expression stopped (the per-call limit, the budget, a failed evaluation); the
	// binding's failurePolicy then decides.
	Errors   []string `json:"errors"`
	Messages []string `json:"messages"`
}

// The resources of the kinds the policy matches (h3doctor/integrations/vap.py RESOURCE_RULES).
var resources = map[string]string{
	"Pod": "pods", "Deployment": "deployments", "StatefulSet": "statefulsets", "ReplicaSet": "replicasets",
	"DaemonSet": "daemonsets", "Job": "jobs", "CronJob": "cronjobs", "LeaderWorkerSet": "leaderworkersets",
}

// validator: a policy's expressions compiled as plugin.go compileValidator does (the stored
// environment, the variables first).
type validator struct {
	name                  string
	validating, messaging plugincel.ConditionEvaluator
}

func compileValidator(p policy) validator {
	base := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion(), strictCost)
	compiler, err := plugincel.NewCompositedCompiler(base)
	if err != nil {
		fail(err.Error())
	}
	decls := plugincel.OptionalVariableDeclarations{HasParams: len(p.Spec.ParamKind) > 0, HasAuthorizer: true, StrictCost: strictCost}
	messageDecls := plugincel.OptionalVariableDeclarations{HasParams: decls.HasParams, HasAuthorizer: false, StrictCost: strictCost}
	variables := make([]plugincel.NamedExpressionAccessor, 0, len(p.Spec.Variables))
	for _, v := range p.Spec.Variables {
		variables = append(variables, &expression{name: v.Name, text: v.Expression, returns: []*cel.Type{cel.AnyType, cel.DynType}})
	}
	compiler.CompileAndStoreVariables(variables, decls, environment.StoredExpressions)
	var validations, messages []plugincel.ExpressionAccessor
	for _, v := range p.Spec.Validations {
		validations = append(validations, &expression{text: v.Expression, returns: []*cel.Type{cel.BoolType}})
		messages = append(messages, &expression{text: v.MessageExpression, returns: []*cel.Type{cel.StringType}})
	}
	return validator{
		name:       p.Metadata.Name,
		validating: compiler.CompileCondition(validations, decls, environment.StoredExpressions),
		messaging:  compiler.CompileCondition(messages, messageDecls, environment.StoredExpressions),
	}
}

func (v validator) evaluate(document map[string]any) run {
	object := &unstructured.Unstructured{Object: document}
	gvk := object.GroupVersionKind()
	out := run{Policy: v.name, Object: gvk.Kind + "/" + object.GetName(), Errors: []string{}, Messages: []string{}}
	gvr := schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: resources[gvk.Kind]}

	attributes := admission.NewAttributesRecord(object, nil, gvk, object.GetNamespace(), object.GetName(), gvr, "",
		admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "vap-cost"})
	versioned := &admission.VersionedAttributes{Attributes: attributes, VersionedKind: gvk, VersionedObject: object}
	request := plugincel.CreateAdmissionRequest(attributes, metav1.GroupVersionResource(gvr), metav1.GroupVersionKind(gvk))
	budget := int64(celconfig.RuntimeCELCostBudget)

	results, left, err := v.validating.ForInput(context.Background(), versioned, request, plugincel.OptionalVariableBindings{}, nil, budget)
	if err != nil {
		out.ValidationsCost, out.Cost = -1, -1
		out.Errors = append(out.Errors, err.Error())
		return out
	}
	out.ValidationsCost = budget - left
	texts, rest, err := v.messaging.ForInput(context.Background(), versioned, request, plugincel.OptionalVariableBindings{}, nil, left)
	out.Cost = budget - rest
	if err != nil || rest < 0 {
		out.Cost = -1
	}
	for i, r := range results {
		if r.Error != nil {
			out.Errors = append(out.Errors, fmt.Sprintf("validations[%d]: %v", i, r.Error))
			continue
		}
		if passed, ok := r.EvalResult.Value().(bool); ok && !passed {
			out.Messages = append(out.Messages, message(texts, i))
			if i < len(texts) && texts[i].Error != nil {
				out.Errors = append(out.Errors, fmt.Sprintf("validations[%d].messageExpression: %v", i, texts[i].Error))
			}
		}
	}
	return out
}

// message: the validation's messageExpression as the validator shows it (its text; with an error
// or no text, the validator falls back to the expression, said here as such).
func message(texts []plugincel.EvaluationResult, i int) string {
	if i < len(texts) && texts[i].Error == nil && texts[i].EvalResult != nil {
		if s, ok := texts[i].EvalResult.Value().(string); ok && strings.TrimSpace(s) != "" {
			return s
		}
	}
	return fmt.Sprintf("validations[%d] failed (its messageExpression gave no message)", i)
}
