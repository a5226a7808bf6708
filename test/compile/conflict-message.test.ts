// A PathConflict says what decided it. --manifests objects rarely carry a creationTimestamp
// (files/documents.ts gives them the epoch), so "created 1970-01-01" would name a date nobody
// wrote: the message says there was none and that namespace/name order decided.
import { expect, test } from "bun:test";
import { compile } from "../../src/compile/compile.ts";
import { DEFAULT_COMPILE_CONFIG } from "./config.ts";
import { parseManifestText } from "../../src/files/documents.ts";
import { snapshotOf } from "./snapshot.ts";

const ingress = (name: string, created: string | null) => `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ${name}, namespace: shop${created ? `, creationTimestamp: "${created}"` : ""}}
spec:
  ingressClassName: portico
  rules: [{host: a.test, http: {paths: [{path: /x, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}}]
`;

function conflict(yaml: string): string {
  const parsed = parseManifestText(yaml, "conflict.yaml");
  if (!parsed.ok) throw new Error(parsed.message);
  const r = compile(snapshotOf(parsed.objects), DEFAULT_COMPILE_CONFIG);
  const d = r.diagnostics.filter((x) => x.reason === "PathConflict");
  expect(d).toHaveLength(1);
  return d[0]!.message;
}

test("between manifest objects with no creationTimestamp: no 1970, namespace/name order decided", () => {
  const m = conflict(`${ingress("b", null)}---${ingress("a", null)}`);
  expect(m).toBe("a.test Prefix /x is also declared by shop/a (no creationTimestamp), which wins over shop/b (no creationTimestamp) (neither has a creationTimestamp: alphabetical namespace/name order decides)");
  expect(m).not.toContain("1970");
});

test("with timestamps the older wins and the message gives both dates; a tie says so", () => {
  expect(conflict(`${ingress("a", "2026-02-01T00:00:00Z")}---${ingress("b", "2026-01-01T00:00:00Z")}`)).toBe(
    "a.test Prefix /x is also declared by shop/b (created 2026-01-01T00:00:00Z), which wins over shop/a (created 2026-02-01T00:00:00Z)",
  );
  expect(conflict(`${ingress("a", "2026-01-01T00:00:00Z")}---${ingress("b", "2026-01-01T00:00:00Z")}`)).toEndWith("(same age: alphabetical order decides)");
  // An object without a timestamp next to one with: it counts as the oldest, and says it has none.
  expect(conflict(`${ingress("a", "2026-01-01T00:00:00Z")}---${ingress("b", null)}`)).toBe(
    "a.test Prefix /x is also declared by shop/b (no creationTimestamp), which wins over shop/a (created 2026-01-01T00:00:00Z)",
  );
});
