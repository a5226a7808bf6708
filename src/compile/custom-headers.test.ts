// custom-headers read from its ConfigMap as customheaders/main.go reads it: what denies the
// location (503) and what becomes the step's fields.
import { describe, expect, test } from "bun:test";
import type { ConfigMap } from "../model/schemas.ts";
import { parseAnnotations } from "./annotations.ts";
import { resolveCustomHeaders } from "./custom-headers.ts";

const ANN = "nginx.ingress.kubernetes.io/custom-headers";
const ing = { metadata: { name: "a", namespace: "ns" } };
const maps = (data: Record<string, string>) => new Map([["ns/h", { metadata: { name: "h", namespace: "ns" }, data } as unknown as ConfigMap]]);
const stagesOf = (value: string, data: Record<string, string>, allowed: string[]) => {
  const r = resolveCustomHeaders(parseAnnotations({ [ANN]: value }), ing, allowed, maps(data));
  return { stages: (r.annotations.options.stages ?? []).map((s) => [s.kind, s.params]), diagnostics: r.diagnostics.map((d) => d.message), read: r.configMap?.key ?? null };
};

describe("resolveCustomHeaders", () => {
  test("allowed entries become the step's fields, sorted, values as written ($ literal)", () => {
    const r = stagesOf("ns/h", { "X-B": "$host", "X-A": "1" }, ["X-A", "X-B"]);
    expect(r.stages).toEqual([["custom-headers", { headers: [["X-A", "1"], ["X-B", "$host"]] }]]);
    expect(r.diagnostics).toEqual([]);
    expect(r.read).toBe("ns/h");
  });

  test.each([
    ["a name not listed in global-allowed-response-headers (compared as written)", { "x-a": "1" }, ["X-A"]],
    ["an empty value (valueRegexp needs one character)", { "X-A": "" }, ["X-A"]],
    ["a value with a character valueRegexp refuses", { "X-A": "a\u00e9" }, ["X-A"]],
    ["a name with a dot", { "X.A": "1" }, ["X.A"]],
    ["a field no policy may set", { "Content-Length": "1" }, ["Content-Length"]],
  ])("%s denies the location: 503", (_what, data, allowed) => {
    const r = stagesOf("ns/h", data, allowed);
    expect(r.stages.map(([k, p]) => [k, (p as { status?: number }).status])).toEqual([["refuse", 503]]);
    expect(r.diagnostics.length).toBe(1);
  });

  test("a bare name, another namespace, or a missing ConfigMap: 503", () => {
    for (const value of ["h", "other/h", "ns/missing"]) expect(stagesOf(value, { "X-A": "1" }, ["X-A"]).stages.map(([k]) => k)).toEqual(["refuse"]);
  });

  test("a value ingress-nginx's validator refuses sets no header and denies nothing", () => {
    const r = resolveCustomHeaders(parseAnnotations({ [ANN]: "ns/h;x" }), ing, ["X-A"], maps({ "X-A": "1" }));
    expect(r.annotations.options.stages ?? []).toEqual([]);
  });
});
