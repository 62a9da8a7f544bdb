#!/usr/bin/env python3
"""tests/cli/apiserver_crd_cases.py: pruning and defaulting of custom objects over raw HTTP
(issue 17 item 2), cases transcribed from apiextensions-apiserver's unit tests:

  P: staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning/algorithm_test.go
     (kubernetes/kubernetes 9efa0b0228c08a0be9eac268ac222025169fe6e8), TestPrune
  D: staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting/algorithm_test.go
     (kubernetes/kubernetes e0a566e71f693433f4bed729380e215e98a263ea), TestDefault

The embedded-resource case expects what kube-apiserver stores, not Prune's output alone: the
metadata of an embedded resource is then coerced to ObjectMeta (schema/objectmeta/coerce.go),
which drops its unknown members.

Each case's schema becomes the `spec` of a cluster-scoped CRD of its own and its input the
object's spec, created with fieldValidation=Ignore (pruning without refusal, as kubectl
--validate=false); the stored spec must be upstream's expected value. Upstream's untyped
Structural nodes get the types of their values (a CRD's schema must be structural).

Then validation cases (V) for the value validations inside anyOf/allOf/oneOf/not
(apiserver/crd_junctors.c): the noxu "delta" of apiextensions-apiserver
test/integration/validation_test.go TestCustomResourceValidationErrors ("bad delta": "must
validate at least one schema (anyOf)" and "delta in body should be at most 5 chars long", there
in the pre-structural v1beta1 form; here its structural form, int-or-string with typed anyOf
branches, and kube-apiserver 1.33's TooLong wording), then one case per junctor after
kube-openapi pkg/validation/validate/schema_props.go: each create must be accepted, or refused
with 422 and every expected message.

    apiserver_crd_cases.py URL CA ADMIN_TOKEN [PD|V]   (default: both sets)
"""
import http.client
import json
import ssl
import sys
from urllib.parse import urlparse

URL, CA, ADMIN = sys.argv[1:4]
SETS = sys.argv[4] if len(sys.argv) > 4 else "PDV"
U = urlparse(URL)
CTX = ssl.create_default_context(cafile=CA)
FAILS = []


def req(method, path, body=None):
    c = http.client.HTTPSConnection(U.hostname, U.port, context=CTX, timeout=20)
    c.request(method, path, body=json.dumps(body) if body is not None else None,
              headers={"Content-Type": "application/json", "Authorization": "Bearer " + ADMIN})
    r = c.getresponse()
    text = r.read()
    c.close()
    return r.status, json.loads(text) if text else None


def obj(props, **kw):
    s = {"type": "object", "properties": props}
    s.update(kw)
    return s


S, I, N, O, A = ({"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "object"},
                 lambda items: {"type": "array", "items": items})
PRESERVE = {"x-kubernetes-preserve-unknown-fields": True}

CASES = [
    ("P object array object",
     obj({"array": A(obj({"a": I, "c": I})), "specified": obj({"a": I, "c": I})}),
     {"array": [{"a": 1}, {"b": 1}, {"a": 1, "b": 2, "c": 3}], "unspecified": {"a": 1},
      "specified": {"a": 1, "b": 2, "c": 3}},
     {"array": [{"a": 1}, {}, {"a": 1, "c": 3}], "specified": {"a": 1, "c": 3}}),
    ("P nested x-kubernetes-preserve-unknown-fields",
     obj({"alpha": S, "beta": N,
          "pruning": obj({"preserving": dict(O, **PRESERVE), "pruning": O}),
          "preserving": obj({"preserving": dict(O, **PRESERVE), "pruning": O}, **PRESERVE),
          "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields":
              dict({"type": "object", "additionalProperties": obj({"specified": O})}, **PRESERVE),
          "preservingAdditionalPropertiesKeyPruneValues":
              {"type": "object", "additionalProperties": obj({"specified": O})}},
         **PRESERVE),
     {"unspecified": "bar", "alpha": "abc", "beta": 42.5,
      "unspecifiedObject": {"unspecified": "bar"},
      "pruning": {"unspecified": "bar", "unspecifiedObject": {"unspecified": "bar"},
                  "pruning": {"unspecified": "bar"}, "preserving": {"unspecified": "bar"}},
      "preserving": {"unspecified": "bar", "unspecifiedObject": {"unspecified": "bar"},
                     "pruning": {"unspecified": "bar"}, "preserving": {"unspecified": "bar"}},
      "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields":
          {"foo": {"specified": {"unspecified": "bar"}, "unspecified": "bar"}},
      "preservingAdditionalPropertiesKeyPruneValues":
          {"foo": {"specified": {"unspecified": "bar"}, "unspecified": "bar"}}},
     {"unspecified": "bar", "alpha": "abc", "beta": 42.5,
      "unspecifiedObject": {"unspecified": "bar"},
      "pruning": {"pruning": {}, "preserving": {"unspecified": "bar"}},
      "preserving": {"unspecified": "bar", "unspecifiedObject": {"unspecified": "bar"},
                     "pruning": {}, "preserving": {"unspecified": "bar"}},
      "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields":
          {"foo": {"specified": {}}},
      "preservingAdditionalPropertiesKeyPruneValues": {"foo": {"specified": {}}}}),
    ("P x-kubernetes-embedded-resource",
     obj({"pruned": obj({"spec": O}, **{"x-kubernetes-embedded-resource": True}),
          "preserving": dict(O, **PRESERVE, **{"x-kubernetes-embedded-resource": True}),
          "nested": obj({"spec": obj({"embedded": obj(
              {"spec": O}, **{"x-kubernetes-embedded-resource": True})})},
              **{"x-kubernetes-embedded-resource": True})}),
     {"unspecified": "bar",
      "pruned": {"apiVersion": "foo/v1", "kind": "Foo", "unspecified": "bar",
                 "metadata": {"name": "instance", "unspecified": "bar"},
                 "spec": {"unspecified": "bar"}},
      "preserving": {"apiVersion": "foo/v1", "kind": "Foo", "unspecified": "bar",
                     "metadata": {"name": "instance", "unspecified": "bar"},
                     "spec": {"unspecified": "bar"}},
      "nested": {"apiVersion": "foo/v1", "kind": "Foo", "unspecified": "bar",
                 "metadata": {"name": "instance", "unspecified": "bar"},
                 "spec": {"unspecified": "bar", "embedded": {
                     "apiVersion": "foo/v1", "kind": "Foo", "unspecified": "bar",
                     "metadata": {"name": "instance", "unspecified": "bar"},
                     "spec": {"unspecified": "bar"}}}}},
     {"pruned": {"apiVersion": "foo/v1", "kind": "Foo", "metadata": {"name": "instance"},
                 "spec": {}},
      "preserving": {"apiVersion": "foo/v1", "kind": "Foo", "unspecified": "bar",
                     "metadata": {"name": "instance"}, "spec": {"unspecified": "bar"}},
      "nested": {"apiVersion": "foo/v1", "kind": "Foo", "metadata": {"name": "instance"},
                 "spec": {"embedded": {"apiVersion": "foo/v1", "kind": "Foo",
                                       "metadata": {"name": "instance"}, "spec": {}}}}}),
    ("D object array",
     obj({"list": A({"type": "object", "properties": {
         "a": {"x-kubernetes-int-or-string": True, "default": "A"},
         "b": {"x-kubernetes-int-or-string": True, "default": "B"},
         "c": {"x-kubernetes-int-or-string": True, "default": "C"}}})}),
     {"list": [{"a": 1}, {"b": 1}, {"c": 1}]},
     {"list": [{"a": 1, "b": "B", "c": "C"}, {"a": "A", "b": 1, "c": "C"},
               {"a": "A", "b": "B", "c": 1}]}),
    ("D object array object",
     obj({"array": A(obj({"a": dict(PRESERVE, default="A"), "b": dict(PRESERVE, default="B")})),
          "object": obj({"a": dict(PRESERVE, default="N"), "b": dict(PRESERVE, default="O")}),
          "additionalProperties": {"type": "object", "additionalProperties": obj(
              {"a": dict(PRESERVE, default="alpha"), "b": dict(PRESERVE, default="beta")})},
          "foo": {"type": "string", "default": "bar"}}),
     {"array": [{"a": 1}, {"b": 2}], "object": {"a": 1},
      "additionalProperties": {"x": {"a": 1}, "y": {"b": 2}}},
     {"array": [{"a": 1, "b": "B"}, {"a": "A", "b": 2}], "object": {"a": 1, "b": "O"},
      "additionalProperties": {"x": {"a": 1, "b": "beta"}, "y": {"a": "alpha", "b": 2}},
      "foo": "bar"}),
    ("D empty and null",
     obj({"list": A(obj({"a": dict(PRESERVE, default="A")}))}),
     {"list": [{}, {"a": 1}, {"a": 0}, {"a": 0.5}, {"a": ""}, {"a": None}, {"a": []},
               {"a": {}}]},
     {"list": [{"a": "A"}, {"a": 1}, {"a": 0}, {"a": 0.5}, {"a": ""}, {"a": "A"}, {"a": []},
               {"a": {}}]}),
    ("D null in nullable object",
     obj({"a": {"type": "string", "nullable": True, "default": "A"}}),
     {"a": None}, {"a": None}),
    ("D null in non-nullable object",
     obj({"a": {"type": "string", "default": "A"}}),
     {"a": None}, {"a": "A"}),
    ("D null in non-nullable list",
     obj({"list": A({"type": "string", "default": "A"})}),
     {"list": [None]}, {"list": ["A"]}),
    ("D null in nullable object with additionalProperties",
     obj({"m": {"type": "object", "additionalProperties":
                {"type": "string", "nullable": True, "default": "A"}}}),
     {"m": {"a": None}}, {"m": {"a": None}}),
    ("D null in non-nullable object with additionalProperties",
     obj({"m": {"type": "object", "additionalProperties": {"type": "string", "default": "A"}}}),
     {"m": {"a": None}}, {"m": {"a": "A"}}),
]

DELTA = {"x-kubernetes-int-or-string": True,
         "anyOf": [{"type": "string", "maxLength": 5}, {"type": "integer", "minimum": 0}]}
ANY_KEY = {"type": "object", "properties": {"a": S, "b": S},
           "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}
VCASES = [
    ("V noxu delta: a short string", obj({"delta": DELTA}), {"delta": "hello"}, None),
    ("V noxu delta: a number", obj({"delta": DELTA}), {"delta": 3}, None),
    ("V noxu delta: bad delta", obj({"delta": DELTA}), {"delta": "foobarbaz"},
     ["spec.delta in body must validate at least one schema (anyOf)",
      "spec.delta: Too long: may not be more than 5 bytes"]),
    ("V noxu delta: a negative number", obj({"delta": DELTA}), {"delta": -1},
     ["must validate at least one schema (anyOf)",
      "spec.delta in body should be greater than or equal to 0"]),
    ("V anyOf of required members: one present", obj({"k": ANY_KEY}), {"k": {"b": "x"}}, None),
    ("V anyOf of required members: none", obj({"k": ANY_KEY}), {"k": {}},
     ["spec.k in body must validate at least one schema (anyOf)", "spec.k.a: Required value"]),
    ("V allOf: both hold", obj({"s": {"type": "string", "allOf": [{"minLength": 2}, {"pattern": "^a"}]}}),
     {"s": "ab"}, None),
    ("V allOf: none holds", obj({"s": {"type": "string", "allOf": [{"minLength": 2}, {"pattern": "^a"}]}}),
     {"s": "b"}, ["spec.s in body should be at least 2 chars long", "spec.s in body should match '^a'",
                  "spec.s in body must validate all the schemas (allOf). None validated"]),
    ("V oneOf: exactly one", obj({"n": {"type": "integer", "oneOf": [{"minimum": 5}, {"maximum": 10}]}}),
     {"n": 3}, None),
    ("V oneOf: two", obj({"n": {"type": "integer", "oneOf": [{"minimum": 5}, {"maximum": 10}]}}),
     {"n": 7}, ["spec.n in body must validate one and only one schema (oneOf). Found 2 valid alternatives"]),
    ("V not: other value", obj({"s": {"type": "string", "not": {"enum": ["forbidden"]}}}),
     {"s": "fine"}, None),
    ("V not: the excluded value", obj({"s": {"type": "string", "not": {"enum": ["forbidden"]}}}),
     {"s": "forbidden"}, ["spec.s in body must not validate the schema (not)"]),
    ("V nested: anyOf in items", obj({"l": A({"type": "string", "anyOf": [{"enum": ["x"]}, {"pattern": "^y"}]})}),
     {"l": ["x", "yes", "z"]}, ["spec.l[2] in body must validate at least one schema (anyOf)"]),
]


def crd_of(i, schema):
    plural, kind = "c%ds" % i, "C%d" % i
    return plural, kind, {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": plural + ".cases.example.com"},
        "spec": {"group": "cases.example.com", "scope": "Cluster",
                 "names": {"plural": plural, "kind": kind},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                     "openAPIV3Schema": {"type": "object", "properties": {"spec": schema}}}}]}}


if "V" not in SETS:
    VCASES = []
if "P" not in SETS:
    CASES = []
for j, (name, schema, given, want) in enumerate(VCASES):
    plural, kind, crd = crd_of(100 + j, schema)
    code, body = req("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    if code != 201:
        FAILS.append(name)
        print("FAIL %s: the CRD: %s %s" % (name, code, body))
        continue
    code, body = req("POST", "/apis/cases.example.com/v1/" + plural,
                     {"apiVersion": "cases.example.com/v1", "kind": kind,
                      "metadata": {"name": "x"}, "spec": given})
    text = json.dumps(body)
    if want is None and code != 201:
        FAILS.append(name)
        print("FAIL %s: refused: %s %s" % (name, code, text))
    elif want is not None and (code != 422 or any(json.dumps(w)[1:-1] not in text for w in want)):
        FAILS.append(name)
        print("FAIL %s: %s %s\n  want 422 with %s" % (name, code, text, want))
    else:
        print("ok   " + name)

for i, (name, schema, given, want) in enumerate(CASES):
    plural, kind = "c%ds" % i, "C%d" % i
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": plural + ".cases.example.com"},
           "spec": {"group": "cases.example.com", "scope": "Cluster",
                    "names": {"plural": plural, "kind": kind},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                        "openAPIV3Schema": {"type": "object", "properties": {"spec": schema}}}}]}}
    code, body = req("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    if code != 201:
        FAILS.append(name)
        print("FAIL %s: the CRD: %s %s" % (name, code, body))
        continue
    path = "/apis/cases.example.com/v1/" + plural
    code, body = req("POST", path + "?fieldValidation=Ignore",
                     {"apiVersion": "cases.example.com/v1", "kind": kind,
                      "metadata": {"name": "x"}, "spec": given})
    got = body.get("spec") if code == 201 and body else None
    if got != want:
        FAILS.append(name)
        print("FAIL %s: %s\n  got  %s\n  want %s" % (name, code, json.dumps(got if got is not None else body), json.dumps(want)))
    else:
        print("ok   " + name)
print("%d cases, %d failed" % (len(CASES) + len(VCASES), len(FAILS)))
sys.exit(1 if FAILS else 0)
