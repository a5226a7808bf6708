import { expect, test } from "bun:test";
import { KINDS, parseObject, type Kind } from "./kinds.ts";
import { LAST_APPLIED_ANNOTATION } from "./schemas.ts";

// The least each kind needs besides metadata to validate.
const REQUIRED: Partial<Record<Kind, Record<string, unknown>>> = {
  EndpointSlice: { addressType: "IPv4" },
  GatewayClass: { spec: { controllerName: "portico.dev/gateway" } },
  Gateway: { spec: { gatewayClassName: "portico", listeners: [{ name: "http", port: 80, protocol: "HTTP" }] } },
  ReferenceGrant: { spec: { from: [{ group: "gateway.networking.k8s.io", kind: "HTTPRoute", namespace: "a" }], to: [{ group: "", kind: "Service" }] } },
};

// Annotations other tools and users set, which stay: an ingress-nginx one, the class
// annotation, Helm's ownership records (small), and an empty value.
const KEPT = {
  "nginx.ingress.kubernetes.io/rewrite-target": "/",
  "kubernetes.io/ingress.class": "portico",
  "meta.helm.sh/release-name": "web",
  "meta.helm.sh/release-namespace": "apps",
  "example.test/empty": "",
};

test("every kind keeps its other annotations and loses only kubectl's last-applied-configuration", () => {
  for (const kind of KINDS) {
    const base = { apiVersion: "v1", kind, ...(REQUIRED[kind] ?? { spec: {} }) };
    const applied = { ...base, metadata: { name: "n", namespace: "ns", annotations: { ...KEPT } } };
    // What `kubectl apply` leaves: the applied object as JSON, one line.
    const raw = { ...base, metadata: { name: "n", namespace: "ns", annotations: { ...KEPT, [LAST_APPLIED_ANNOTATION]: `${JSON.stringify(applied)}\n` } } };
    const r = parseObject(kind, raw);
    if (!r.ok) throw new Error(`${kind}: ${r.diagnostic.message}`);
    expect({ kind, annotations: r.object.metadata.annotations }).toEqual({ kind, annotations: KEPT });
  }
});

test("an object with only last-applied-configuration keeps an empty annotation map; one without annotations is unchanged", () => {
  const only = parseObject("Ingress", { metadata: { name: "a", annotations: { [LAST_APPLIED_ANNOTATION]: "{}" } }, spec: {} });
  expect(only.ok && only.object.metadata.annotations).toEqual({});
  const none = parseObject("Ingress", { metadata: { name: "a" }, spec: {} });
  expect(none.ok && none.object.metadata.annotations).toBeUndefined();
  const nul = parseObject("Ingress", { metadata: { name: "a", annotations: null }, spec: {} });
  expect(nul.ok && nul.object.metadata.annotations).toBeNull();
});

test("a non-string value is still refused, last-applied-configuration or not", () => {
  const bad = parseObject("Ingress", { metadata: { name: "a", annotations: { [LAST_APPLIED_ANNOTATION]: 1 } }, spec: {} });
  expect(bad.ok).toBe(false);
});
