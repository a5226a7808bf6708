// A backend port name must hold a letter, as the API server requires (IANA_SVC_NAME): an
// all-digit name can only come from --manifests, and would share its backend id (and so its
// resolution) with the port number of the same digits.
import { expect, test } from "bun:test";
import { compile } from "../../src/compile/compile.ts";
import { DEFAULT_COMPILE_CONFIG } from "./config.ts";
import { lookup } from "../../src/table/lookup.ts";
import { loadFixture } from "./snapshot.ts";

const yaml = `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec: {ports: [{name: "80", port: 8080, targetPort: 8080}, {name: http, port: 80, targetPort: 9090}]}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: by-number, namespace: default, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  ingressClassName: portico
  rules: [{host: a.test, http: {paths: [{path: /num, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: by-digits, namespace: default, creationTimestamp: "2026-01-02T00:00:00Z"}
spec:
  ingressClassName: portico
  rules: [{host: a.test, http: {paths: [{path: /name, pathType: Prefix, backend: {service: {name: web, port: {name: "80"}}}}]}}]
`;

test("an all-digit port name is an invalid backend, and the port number of the same digits is unaffected", () => {
  const fx = loadFixture(yaml);
  const r = compile(fx.snapshot, DEFAULT_COMPILE_CONFIG);
  const num = lookup(r.table, "a.test", "/num");
  expect(num?.route.backend.id).toBe("default/web:80");
  expect(num?.route.backend.port).toBe("80");
  expect(lookup(r.table, "a.test", "/name")).toBeNull();
  const d = r.diagnostics.find((x) => x.name === "by-digits");
  expect(d?.message).toContain('port name "80" must contain a letter');
});
