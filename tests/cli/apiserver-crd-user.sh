#!/bin/bash
# tests/cli/apiserver-crd-user.sh: issue 17 items 1-2. A user's CustomResourceDefinition
# (apiextensions.k8s.io/v1), applied with kubectl 1.27 and 1.33, makes its kind served:
#   - the CRD stored with status (NamesAccepted, Established, acceptedNames, storedVersions);
#   - discovery (group list, resource list with short names and categories), OpenAPI v2 and v3
#     (kubectl explain) updated live;
#   - custom objects created, read, listed, watched, patched (merge, JSON, server-side apply),
#     deleted with resourceVersion preconditions, in a namespaced and a cluster-scoped kind; the
#     status subresource; printer columns;
#   - the schema: types, required, enum, minimum/maximum, maxItems, defaults, int-or-string,
#     preserve-unknown-fields, unknown fields refused (Strict) or pruned (--validate=false);
#     formats, exclusive and number bounds, multipleOf;
#   - several versions (None conversion, a deprecated one with its warning, one not served), the
#     scale subresource (kubectl scale);
#   - CEL rules (x-kubernetes-validations: message, messageExpression, fieldPath, reason, a
#     transition rule with oldSelf) and patterns; a rule that does not compile refuses the CRD;
#   - a restart serves it again; deleting the CRD deletes its objects and stops serving it;
#   - pruning and defaulting cases transcribed from apiextensions-apiserver's unit tests
#     (apiserver_crd_cases.py, each citing its source);
#   - names another kind of the group has (NamesAccepted False, not served);
#   - what a hostile user tries: replacing a compiled kind's CRD (Kueue's), deleting one, a CRD in
#     a Kubernetes group, a name that is not plural.group, a tenant writing a CRD.
# FATIA_TEST_STORE=etcd runs the same on the etcd backend (etcd_apiserver-crd-user).
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"

cat >"$TMP/crd.yaml" <<'YAML'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wdg], categories: [gadgets]}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Color, type: string, jsonPath: .spec.color, priority: 1}
    - {name: Phase, type: string, jsonPath: .status.phase}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            properties:
              size: {type: integer, minimum: 1, maximum: 10, description: How big the widget is}
              color: {type: string, enum: [red, blue], default: red}
              tags: {type: array, items: {type: string}, maxItems: 3}
              extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
              port: {x-kubernetes-int-or-string: true}
          status:
            type: object
            properties:
              phase: {type: string}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: racks.example.com}
spec:
  group: example.com
  names: {plural: racks, kind: Rack}
  scope: Cluster
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              slots: {type: integer, default: 42}
YAML

# several versions (None conversion: only apiVersion changes), a deprecated one, one not
# served; the scale subresource
cat >"$TMP/pools.yaml" <<'YAML'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: pools.example.com}
spec:
  group: example.com
  names: {plural: pools, kind: Pool}
  scope: Namespaced
  versions:
  - name: v1beta1
    served: true
    storage: false
    deprecated: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}, selector: {type: string}}}
          status: {type: object, properties: {size: {type: integer}, selector: {type: string}}}
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.size, statusReplicasPath: .status.size, labelSelectorPath: .status.selector}
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer, maximum: 100}, selector: {type: string}}}
          status: {type: object, properties: {size: {type: integer}, selector: {type: string}}}
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.size, statusReplicasPath: .status.size, labelSelectorPath: .status.selector}
  - name: v0
    served: false
    storage: false
    schema: {openAPIV3Schema: {type: object}}
YAML

# CEL rules (x-kubernetes-validations: message, messageExpression, fieldPath, reason, a
# transition rule) and a pattern
cat >"$TMP/gates.yaml" <<'YAML'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gates.example.com}
spec:
  group: example.com
  names: {plural: gates, kind: Gate}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: "self.minReplicas <= self.replicas"
              message: "replicas should be greater than or equal to minReplicas."
            - rule: "!has(self.mode) || self.mode != 'locked' || self.replicas == 0"
              messageExpression: "'a locked gate has 0 replicas, not ' + string(self.replicas)"
              fieldPath: .replicas
            properties:
              replicas: {type: integer}
              minReplicas: {type: integer}
              mode: {type: string, pattern: '^[a-z]+$'}
              network:
                type: object
                properties: {sub: {type: string}}
                x-kubernetes-validations:
                - {rule: "self == oldSelf", message: "Value is immutable"}
              items:
                type: array
                items: {type: string}
                x-kubernetes-validations:
                - {rule: "self.all(x, x.startsWith('i-'))", reason: FieldValueForbidden}
YAML

# formats, exclusive bounds, number bounds, multipleOf
cat >"$TMP/probes.yaml" <<'YAML'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: probes.example.com}
spec:
  group: example.com
  names: {plural: probes, kind: Probe}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              id: {type: string, format: uuid}
              day: {type: string, format: date}
              ip: {type: string, format: ipv4}
              net: {type: string, format: cidr}
              host: {type: string, format: hostname}
              wait: {type: string, format: duration}
              ratio: {type: number, minimum: 0, maximum: 1}
              count: {type: integer, minimum: 0, exclusiveMinimum: true, multipleOf: 5}
              anything: {type: string, format: password}
YAML

# a list-type=map list: server-side apply merges it by key
cat >"$TMP/nests.yaml" <<'YAML'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: nests.example.com}
spec:
  group: example.com
  names: {plural: nests, kind: Nest}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              list:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string, minLength: 1}
                    value: {type: integer, default: 7, nullable: true}
                    inner: {type: object, default: {}, properties: {a: {type: string, default: x}}}
              tmpl:
                type: object
                x-kubernetes-embedded-resource: true
                x-kubernetes-preserve-unknown-fields: true
              when: {type: string, format: date-time}
              m: {type: object, additionalProperties: {type: array, items: {type: boolean}}, maxProperties: 2}
YAML

cat >"$TMP/w1.yaml" <<'YAML'
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1, namespace: default}
spec: {size: 3, tags: [a], extra: {anything: {goes: 1}}, port: http}
YAML

# fatia validate: a CRD among the inputs defines its kind for the documents after it (the same
# verdict and words as fatiad's, but for CEL rules and patterns); without it, the kind is unknown
cat >"$TMP/w-bad.yaml" <<'YAML'
apiVersion: example.com/v1
kind: Widget
metadata: {name: w2, namespace: default}
spec: {size: 30, color: green}
YAML
expect_rc 0 "$FATIA" validate -f "$TMP/crd.yaml" -f "$TMP/w1.yaml"
expect_line "$TMP/out" "ok widget/default/w1"
expect_rc 1 "$FATIA" validate -f "$TMP/crd.yaml" -f "$TMP/w-bad.yaml"
expect_line "$TMP/out" 'spec.size: Invalid value: 30: spec.size in body should be less than or equal to 10'
expect_line "$TMP/out" 'spec.color: Unsupported value: "green": supported values: "red", "blue"'
expect_rc 1 "$FATIA" validate -f "$TMP/w1.yaml"
expect_line "$TMP/out" 'unknown kind "Widget" in example.com/v1'

# pruning and defaulting cases transcribed from apiextensions-apiserver (apiserver_crd_cases.py;
# its junctor cases run in apiserver-crd-junctors.sh)
start_fatiad "$TMP/data-cases"
python3 tests/cli/apiserver_crd_cases.py "$URL" "$CA" "$TOKEN" PD >"$TMP/cases.out" 2>&1 ||
    fail "apiserver_crd_cases.py: $(cat "$TMP/cases.out")"
grep -q '^11 cases, 0 failed$' "$TMP/cases.out" || fail "cases: $(tail -1 "$TMP/cases.out")"
stop_fatiad

for v in 1.27 1.33; do
    k="$KUBECTL_DIR/kubectl.$v"
    start_fatiad "$TMP/data-$v" || break
    export KUBECONFIG=$KCFG

    # before: no such kind
    expect_rc 1 "$k" apply -f "$TMP/w1.yaml"
    expect_line "$TMP/err" 'no matches for kind "Widget" in version "example.com/v1"'

    expect_rc 0 "$k" apply -f "$TMP/crd.yaml"
    expect_line "$TMP/out" "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created"
    expect_rc 0 "$k" wait --for condition=established --timeout=10s crd/widgets.example.com
    expect_rc 0 "$k" get crd widgets.example.com -o jsonpath='{.status.acceptedNames.kind} {.status.acceptedNames.listKind} {.status.acceptedNames.shortNames} {.status.storedVersions} {.status.conditions[?(@.type=="NamesAccepted")].status} {.status.conditions[?(@.type=="Established")].reason}'
    expect_line "$TMP/out" 'Widget WidgetList ["wdg"] ["v1"] True InitialNamesAccepted'
    expect_rc 0 "$k" get crd racks.example.com -o jsonpath='{.spec.names.singular} {.status.acceptedNames.singular}'
    expect_line "$TMP/out" 'rack rack'

    # discovery and OpenAPI, live
    expect_rc 0 "$k" api-resources --api-group=example.com
    expect_line "$TMP/out" "widgets"
    grep -E '^widgets +wdg +example.com/v1 +true +Widget$' "$TMP/out" >/dev/null ||
        fail "kubectl $v: api-resources: $(cat "$TMP/out")"
    grep -E '^racks +example.com/v1 +false +Rack$' "$TMP/out" >/dev/null ||
        fail "kubectl $v: api-resources (racks): $(cat "$TMP/out")"
    api GET /apis
    grep -q '"name":"example.com"' "$TMP/body" || fail "kubectl $v: /apis lacks example.com"
    api GET /apis/example.com/v1
    grep -q '"categories":\["gadgets"\]' "$TMP/body" || fail "kubectl $v: no categories: $(cat "$TMP/body")"
    grep -q '"name":"widgets/status"' "$TMP/body" || fail "kubectl $v: no widgets/status"
    api GET /openapi/v2
    grep -q '"/apis/example.com/v1/namespaces/{namespace}/widgets' "$TMP/body" ||
        fail "kubectl $v: /openapi/v2 lacks widgets"
    expect_rc 0 "$k" explain widget.spec.size
    expect_line "$TMP/out" "How big the widget is"

    # create, get, list, columns, defaults
    expect_rc 0 "$k" apply -f "$TMP/w1.yaml"
    expect_line "$TMP/out" "widget.example.com/w1 created"
    expect_rc 0 "$k" get wdg w1 -o jsonpath='{.spec.color} {.spec.port} {.spec.extra.anything.goes} {.metadata.generation}'
    expect_line "$TMP/out" "red http 1 1"
    expect_rc 0 "$k" get widgets -o wide
    grep -E '^w1 +3 +red +' "$TMP/out" >/dev/null || fail "kubectl $v: columns: $(cat "$TMP/out")"
    expect_rc 0 "$k" get gadgets
    expect_line "$TMP/out" "w1"
    expect_rc 0 "$k" apply -f "$TMP/w1.yaml"
    expect_line "$TMP/out" "widget.example.com/w1 unchanged"

    # the schema refuses, naming every field
    expect_rc 1 "$k" apply -f - <<'YAML'
apiVersion: example.com/v1
kind: Widget
metadata: {name: w2, namespace: default}
spec: {size: 30, color: green, tags: [a, b, c, d], port: 1.5}
YAML
    # kube-apiserver's words (kube-openapi's validator, apiextensions-apiserver's field errors)
    expect_line "$TMP/err" '* spec.size: Invalid value: 30: spec.size in body should be less than or equal to 10'
    expect_line "$TMP/err" '* spec.color: Unsupported value: "green": supported values: "red", "blue"'
    expect_line "$TMP/err" '* spec.tags: Too many: 4: must have at most 3 items'
    expect_line "$TMP/err" '* spec.port: Invalid value: "number": spec.port in body must be of type integer,string: "number"'
    expect_rc 1 "$k" get widget w2
    expect_rc 1 "$k" create -f - <<'YAML'
apiVersion: example.com/v1
kind: Widget
metadata: {name: w3, namespace: default}
spec: {color: blue}
YAML
    expect_line "$TMP/err" "spec.size: Required value"
    # unknown fields: refused under Strict (kubectl's default), pruned otherwise
    expect_rc 1 "$k" create -f - <<'YAML'
apiVersion: example.com/v1
kind: Widget
metadata: {name: w4, namespace: default}
spec: {size: 2, bogus: 1}
YAML
    expect_line "$TMP/err" 'unknown field "spec.bogus"'
    expect_rc 0 "$k" create --validate=false -f - <<'YAML'
apiVersion: example.com/v1
kind: Widget
metadata: {name: w4, namespace: default}
spec: {size: 2, bogus: 1}
status: {phase: Forged}
YAML
    expect_rc 0 "$k" get widget w4 -o jsonpath='{.spec} {.status}'
    expect_line "$TMP/out" '{"color":"red","size":2} '
    grep -q Forged "$TMP/out" && fail "kubectl $v: status written through the main resource"

    # patches: merge, JSON, the status subresource; status through the main resource is ignored
    expect_rc 0 "$k" patch widget w1 --type=merge -p '{"spec":{"size":4}}'
    expect_rc 0 "$k" patch widget w1 --type=json -p '[{"op":"replace","path":"/spec/size","value":5}]'
    expect_rc 1 "$k" patch widget w1 --type=merge -p '{"spec":{"size":11}}'
    expect_line "$TMP/err" "spec.size"
    api PATCH "/apis/example.com/v1/namespaces/default/widgets/w1/status" \
        -H 'Content-Type: application/merge-patch+json' -d '{"status":{"phase":"Ready"}}'
    [ "$CODE" = 200 ] || fail "kubectl $v: status patch: $CODE $(cat "$TMP/body")"
    expect_rc 0 "$k" patch widget w1 --type=merge -p '{"status":{"phase":"Hacked"}}'
    expect_rc 0 "$k" get widget w1 -o jsonpath='{.spec.size} {.status.phase} {.metadata.generation}'
    expect_line "$TMP/out" "5 Ready 3"
    expect_rc 0 "$k" get widgets
    grep -E '^w1 +5 +Ready +' "$TMP/out" >/dev/null || fail "kubectl $v: status column: $(cat "$TMP/out")"
    # server-side apply: a conflict with the patch's manager, then forced
    expect_rc 1 "$k" apply --server-side -f "$TMP/w1.yaml"
    expect_line "$TMP/err" "conflict"
    expect_rc 0 "$k" apply --server-side --force-conflicts -f "$TMP/w1.yaml"
    expect_rc 0 "$k" get widget w1 -o jsonpath='{.spec.size}'
    expect_line "$TMP/out" "3"

    # resourceVersion: a stale update is a 409
    rv=$("$k" get widget w1 -o jsonpath='{.metadata.resourceVersion}')
    api PUT "/apis/example.com/v1/namespaces/default/widgets/w1" -H 'Content-Type: application/json' \
        -d '{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1","namespace":"default","resourceVersion":"1"},"spec":{"size":1}}'
    [ "$CODE" = 409 ] || fail "kubectl $v: stale update: $CODE"
    api GET "/apis/example.com/v1/namespaces/default/widgets?watch=1&resourceVersion=$rv&timeoutSeconds=2" &
    wpid=$!
    sleep 0.5
    expect_rc 0 "$k" patch widget w1 --type=merge -p '{"spec":{"size":6}}'
    wait $wpid
    grep -q '"type":"MODIFIED".*"size":6' "$TMP/body" || fail "kubectl $v: watch: $(cat "$TMP/body")"

    # cluster scope, its default
    expect_rc 0 "$k" apply -f - <<'YAML'
apiVersion: example.com/v1
kind: Rack
metadata: {name: r1}
spec: {}
YAML
    expect_rc 0 "$k" get rack r1 -o jsonpath='{.spec.slots}'
    expect_line "$TMP/out" "42"
    api GET /apis/example.com/v1/namespaces/default/racks/r1
    [ "$CODE" = 404 ] || fail "kubectl $v: a cluster-scoped kind under a namespace: $CODE"

    # versions and scale
    expect_rc 0 "$k" apply -f "$TMP/pools.yaml"
    expect_rc 0 "$k" apply -f - <<'YAML'
apiVersion: example.com/v1beta1
kind: Pool
metadata: {name: p1, namespace: default}
spec: {size: 2}
YAML
    expect_line "$TMP/err" "example.com/v1beta1 Pool is deprecated"
    expect_rc 0 "$k" get pools.v1beta1.example.com p1 -o jsonpath='{.apiVersion} {.spec.size}'
    expect_line "$TMP/out" "example.com/v1beta1 2"
    expect_rc 0 "$k" get pools p1 -o jsonpath='{.apiVersion}'
    expect_line "$TMP/out" "example.com/v1"
    api GET /apis/example.com/v0/namespaces/default/pools
    [ "$CODE" = 404 ] || fail "kubectl $v: an unserved version: $CODE"
    api GET /apis/example.com/v1
    grep -q '"name":"pools/scale"' "$TMP/body" || fail "kubectl $v: no pools/scale in discovery"
    expect_rc 0 "$k" scale pool p1 --replicas=5
    expect_rc 0 "$k" get pool p1 -o jsonpath='{.spec.size}'
    expect_line "$TMP/out" "5"
    api GET /apis/example.com/v1/namespaces/default/pools/p1/scale
    grep -q '"spec":{"replicas":5}' "$TMP/body" || fail "kubectl $v: scale: $(cat "$TMP/body")"
    expect_rc 1 "$k" scale pool p1 --replicas=500
    expect_line "$TMP/err" "spec.size: Invalid value: 500: spec.size in body should be less than or equal to 100"

    # CEL rules and patterns, in kube-apiserver's words
    expect_rc 0 "$k" apply -f "$TMP/gates.yaml"
    expect_rc 1 "$k" apply -f - <<'YAML'
apiVersion: example.com/v1
kind: Gate
metadata: {name: g1, namespace: default}
spec: {replicas: 1, minReplicas: 3, mode: "locked", items: [i-a, b], network: {sub: a}}
YAML
    expect_line "$TMP/err" '* spec: Invalid value: "object": replicas should be greater than or equal to minReplicas.'
    expect_line "$TMP/err" '* spec.replicas: Invalid value: "object": a locked gate has 0 replicas, not 1'
    expect_line "$TMP/err" "* spec.items: Forbidden: failed rule: self.all(x, x.startsWith('i-'))"
    expect_rc 1 "$k" apply -f - <<'YAML'
apiVersion: example.com/v1
kind: Gate
metadata: {name: g1, namespace: default}
spec: {replicas: 3, minReplicas: 1, mode: "Open1", network: {sub: a}}
YAML
    expect_line "$TMP/err" "spec.mode: Invalid value: \"Open1\": spec.mode in body should match '^[a-z]+\$'"
    expect_rc 0 "$k" apply -f - <<'YAML'
apiVersion: example.com/v1
kind: Gate
metadata: {name: g1, namespace: default}
spec: {replicas: 3, minReplicas: 1, mode: "open", items: [i-1], network: {sub: a}}
YAML
    # the transition rule: not on create, on every update
    expect_rc 1 "$k" patch gate g1 --type=merge -p '{"spec":{"network":{"sub":"b"}}}'
    expect_line "$TMP/err" 'spec.network: Invalid value: "object": Value is immutable'
    expect_rc 0 "$k" patch gate g1 --type=merge -p '{"spec":{"replicas":4}}'
    # a rule or a pattern that does not compile refuses the CRD
    expect_rc 1 "$k" apply -f - <<'YAML'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: bads.example.com}
spec:
  group: example.com
  names: {plural: bads, kind: Bad}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations: [{rule: "self.x +"}]
            properties:
              name: {type: string, pattern: "(unclosed"}
YAML
    expect_line "$TMP/err" 'spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: "self.x +": compilation failed:'
    expect_line "$TMP/err" 'spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[name].pattern: Invalid value: "(unclosed": must be a valid regular expression'
    expect_rc 1 "$k" get crd bads.example.com

    # formats (kube-openapi's), exclusive and number bounds, multipleOf
    expect_rc 0 "$k" apply -f "$TMP/probes.yaml"
    expect_rc 1 "$k" apply -f - <<'YAML'
apiVersion: example.com/v1
kind: Probe
metadata: {name: p1, namespace: default}
spec: {id: not-a-uuid, day: "2026-02-30", ip: 300.1.1.1, net: 10.0.0.0/33, host: "-bad", wait: 5x, ratio: 1.5, count: 0, anything: x}
YAML
    for f in 'spec.count: Invalid value: 0: spec.count in body should be greater than 0' \
        'spec.day: Invalid value: "2026-02-30": spec.day in body must be of type date: "2026-02-30"' \
        'spec.host: Invalid value: "-bad": spec.host in body must be of type hostname' \
        'spec.id: Invalid value: "not-a-uuid": spec.id in body must be of type uuid' \
        'spec.ip: Invalid value: "300.1.1.1": spec.ip in body must be of type ipv4' \
        'spec.net: Invalid value: "10.0.0.0/33": spec.net in body must be of type cidr' \
        'spec.ratio: Invalid value: 1.5: spec.ratio in body should be less than or equal to 1' \
        'spec.wait: Invalid value: "5x": spec.wait in body must be of type duration'; do
        expect_line "$TMP/err" "$f"
    done
    expect_rc 1 "$k" apply -f - <<'YAML'
apiVersion: example.com/v1
kind: Probe
metadata: {name: p1, namespace: default}
spec: {id: 123e4567-e89b-12d3-a456-426614174000, day: "2024-02-29", ip: 10.1.2.3, net: 10.0.0.0/8, host: a.example.com, wait: 1h30m, ratio: 0.5, count: 7}
YAML
    expect_line "$TMP/err" 'spec.count: Invalid value: 7: spec.count in body should be a multiple of 5'
    expect_rc 0 "$k" apply -f - <<'YAML'
apiVersion: example.com/v1
kind: Probe
metadata: {name: p1, namespace: default}
spec: {id: 123e4567-e89b-12d3-a456-426614174000, day: "2024-02-29", ip: 10.1.2.3, net: 10.0.0.0/8, host: a.example.com, wait: 1h30m, ratio: 0.5, count: 10, anything: x}
YAML

    # server-side apply of a list-type=map list: two managers' items merge by key; one manager
    # removing its item leaves the other's
    expect_rc 0 "$k" apply -f "$TMP/nests.yaml"
    printf 'apiVersion: example.com/v1\nkind: Nest\nmetadata: {name: n1, namespace: default}\nspec:\n  list: [{name: %s, value: %s}]\n' a 1 >"$TMP/n-a.yaml"
    printf 'apiVersion: example.com/v1\nkind: Nest\nmetadata: {name: n1, namespace: default}\nspec:\n  list: [{name: %s, value: %s}]\n' b 2 >"$TMP/n-b.yaml"
    printf 'apiVersion: example.com/v1\nkind: Nest\nmetadata: {name: n1, namespace: default}\nspec:\n  list: []\n' >"$TMP/n-a2.yaml"
    expect_rc 0 "$k" apply --server-side --field-manager=alice -f "$TMP/n-a.yaml"
    expect_rc 0 "$k" apply --server-side --field-manager=bob -f "$TMP/n-b.yaml"
    expect_rc 0 "$k" get nest n1 -o jsonpath='{.spec.list[*].name}'
    expect_line "$TMP/out" "a b"
    expect_rc 0 "$k" apply --server-side --field-manager=alice -f "$TMP/n-a2.yaml"
    expect_rc 0 "$k" get nest n1 -o jsonpath='{.spec.list[*].name}'
    [ "$(cat "$TMP/out")" = b ] || fail "kubectl $v: SSA list-map: $(cat "$TMP/out")"

    # names another kind of the group has: NamesAccepted False, not served (upstream's naming
    # controller)
    expect_rc 0 "$k" apply -f - <<'YAML'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: doohickeys.example.com}
spec:
  group: example.com
  names: {plural: doohickeys, kind: Doohickey, shortNames: [wdg]}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
YAML
    expect_rc 0 "$k" get crd doohickeys.example.com -o jsonpath='{.status.conditions[?(@.type=="NamesAccepted")].reason} {.status.conditions[?(@.type=="NamesAccepted")].message} {.status.conditions[?(@.type=="Established")].status}'
    expect_line "$TMP/out" 'ShortNamesConflict "wdg" is already in use False'
    api GET /apis/example.com/v1/namespaces/default/doohickeys
    [ "$CODE" = 404 ] || fail "kubectl $v: a CRD whose names conflict is served: $CODE"
    expect_rc 0 "$k" delete crd doohickeys.example.com

    # hostile: replacing a compiled kind, a Kubernetes group, a bad name, a tenant
    expect_rc 1 "$k" apply -f - <<'YAML'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: clusterqueues.kueue.x-k8s.io}
spec:
  group: kueue.x-k8s.io
  names: {plural: clusterqueues, kind: ClusterQueue}
  scope: Cluster
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
YAML
    expect_line "$TMP/err" "may not be changed"
    expect_rc 1 "$k" apply -f - <<'YAML'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: evils.apps}
spec:
  group: apps
  names: {plural: evils, kind: Evil}
  scope: Cluster
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
YAML
    expect_line "$TMP/err" "spec.group"
    expect_rc 1 "$k" apply -f - <<'YAML'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gizmos.example.com}
spec:
  group: example.com
  names: {plural: gadgets, kind: Gizmo}
  scope: Cluster
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {x: {}}}}}}}]
YAML
    expect_line "$TMP/err" 'metadata.name: Invalid value: "gizmos.example.com"'
    expect_line "$TMP/err" "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[x].type: Required value"
    expect_rc 1 "$k" delete crd clusterqueues.kueue.x-k8s.io
    expect_line "$TMP/err" "may not be deleted"
    expect_rc 1 "$k" patch crd widgets.example.com --type=merge -p '{"spec":{"scope":"Cluster"}}'
    expect_line "$TMP/err" "field is immutable"
    expect_rc 0 "$FATIA" token create --data-dir "$TMP/data-$v" --user mallory --namespace default
    cp "$TMP/out" "$TMP/mallory.kubeconfig"
    expect_rc 1 "$k" --kubeconfig "$TMP/mallory.kubeconfig" delete crd widgets.example.com
    expect_line "$TMP/err" "Forbidden"
    expect_rc 0 "$k" get crd widgets.example.com -o name

    # a restart serves the kinds and their objects again
    stop_fatiad
    start_fatiad "$TMP/data-$v" || break
    export KUBECONFIG=$KCFG
    expect_rc 0 "$k" get widget w1 -o jsonpath='{.spec.size} {.status.phase}'
    expect_line "$TMP/out" "6 Ready"
    expect_rc 0 "$k" get rack r1 -o name

    # deleting the CRD deletes its objects and the kind
    expect_rc 0 "$k" delete crd widgets.example.com
    expect_rc 1 "$k" get widgets
    api GET /apis/example.com/v1/namespaces/default/widgets
    [ "$CODE" = 404 ] || fail "kubectl $v: a deleted CRD's resource: $CODE"
    api GET /apis/example.com/v1
    grep -q '"widgets"' "$TMP/body" && fail "kubectl $v: discovery still lists widgets"
    api GET /openapi/v2
    grep -q '/widgets' "$TMP/body" && fail "kubectl $v: /openapi/v2 still has widgets"
    # created again: empty
    expect_rc 0 "$k" apply -f "$TMP/crd.yaml"
    expect_rc 0 "$k" get widgets -A -o name
    [ -s "$TMP/out" ] && fail "kubectl $v: objects of a deleted CRD came back: $(cat "$TMP/out")"
    stop_fatiad
    # and after a restart too (the deletions were written)
    start_fatiad "$TMP/data-$v" || break
    export KUBECONFIG=$KCFG
    expect_rc 0 "$k" get widgets -A -o name
    [ -s "$TMP/out" ] && fail "kubectl $v: objects of a deleted CRD after a restart: $(cat "$TMP/out")"
    stop_fatiad
done
finish
