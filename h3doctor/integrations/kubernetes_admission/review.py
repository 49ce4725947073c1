"""AdmissionReview v1 in, AdmissionReview v1 out: the webhook's answer as data, with no I/O.

Warn mode (the default) always allows, with warnings; deny mode refuses a launch whose findings
say it will fail. A review that is not one (not JSON, another kind, no uid, no object) is a
`BadReview`, answered 400 by the server: never an `allowed` answer, so deny mode never lets an
unread object through by accident (the API server then applies the webhook's failurePolicy).
"""

from __future__ import annotations

from typing import Any

from h3doctor.integrations.kubernetes_admission.judge import Judge
from h3doctor.integrations.kubernetes_admission.warnings import warning_lines
from h3doctor.safeload import LoadError, load_json

API_VERSION = "admission.k8s.io/v1"
JUDGED_OPERATIONS = ("CREATE", "UPDATE")  # DELETE and CONNECT carry no new launch


class BadReview(ValueError):
    """Not an AdmissionReview v1 request h3doctor can answer; the message says what is wrong."""


def answer(body: bytes, judge: Judge, *, deny: bool) -> dict[str, Any]:
    request = _request(body)
    response: dict[str, Any] = {"uid": request["uid"], "allowed": True}
    obj = request.get("object")
    if request.get("operation") in JUDGED_OPERATIONS:
        if not isinstance(obj, dict):
            raise BadReview(f"request.object is not an object ({type(obj).__name__})")
        verdict = judge.judge(obj)
        if verdict.warnings:
            response["warnings"] = list(verdict.warnings)
        if deny and verdict.failing:
            response["allowed"] = False
            response["status"] = {"code": 403, "reason": "Forbidden",
                                  "message": warning_lines([f"h3doctor: sglang would fail: {verdict.failing[0]}"])[0]}
    # dryRun (kubectl --dry-run=server) is answered the same: judging records nothing (sideEffects: None)
    return {"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": response}


def _request(body: bytes) -> dict[str, Any]:
    try:
        text = body.decode("utf-8")
        review = load_json(text, origin="AdmissionReview")
    except (UnicodeDecodeError, LoadError) as exc:
        raise BadReview(f"not a JSON AdmissionReview: {getattr(exc, 'message', None) or exc.reason}") from None
    if not isinstance(review, dict) or review.get("kind") != "AdmissionReview":
        raise BadReview("not an AdmissionReview (kind)")
    if review.get("apiVersion") != API_VERSION:
        raise BadReview(f"apiVersion must be {API_VERSION} (admissionReviewVersions: [v1])")
    request = review.get("request")
    if not isinstance(request, dict):
        raise BadReview("no request in the AdmissionReview")
    if not isinstance(request.get("uid"), str) or not request["uid"]:
        raise BadReview("request.uid is missing or not a string")
    return request
