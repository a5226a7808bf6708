// add-headers / proxy-set-headers read from their ConfigMaps (nginx.go GetConfigMap; nginx.tmpl
// more_set_headers in the http block, proxy_set_header in every location).
import { describe, expect, test } from "bun:test";
import type { ConfigMap } from "../model/schemas.ts";
import { resolveGlobalHeaders } from "./global-headers.ts";

const cm = (name: string, data: Record<string, string>) => [`ns/${name}`, { metadata: { name, namespace: "ns" }, data } as unknown as ConfigMap] as const;

describe("resolveGlobalHeaders", () => {
  test("entries sorted by name, names lowercased, variables kept as parts", () => {
    const maps = new Map([cm("add", { "X-B": "two", "X-A": "one $host" }), cm("set", { "X-Tag": "$remote_addr" })]);
    const r = resolveGlobalHeaders({ addHeaders: { namespace: "ns", name: "add" }, proxySetHeaders: { namespace: "ns", name: "set" } }, maps);
    expect(r.diagnostics).toEqual([]);
    expect(r.headers).toEqual({
      response: [{ name: "x-a", value: ["one ", { v: "host" }] }, { name: "x-b", value: ["two"] }],
      request: [{ name: "x-tag", value: [{ v: "remote_addr" }] }],
    });
  });

  test("a missing ConfigMap is a warning and sets nothing, as nginx.go's", () => {
    const r = resolveGlobalHeaders({ addHeaders: { namespace: "ns", name: "gone" }, proxySetHeaders: null }, new Map());
    expect(r.headers).toBeNull();
    expect(r.diagnostics.map((d) => [d.kind, d.name, d.reason])).toEqual([["ConfigMap", "gone", "InvalidConfigKey"]]);
  });

  test("an entry Portico cannot send is left out with a warning; the others apply", () => {
    const maps = new Map([cm("set", { Host: "evil", "X-Forwarded-For": "1.2.3.4", "X-Var": "$document_root", "X-Ctl": "a\u0001b", "bad name": "x", "X-Ok": "ok" })]);
    const r = resolveGlobalHeaders({ addHeaders: null, proxySetHeaders: { namespace: "ns", name: "set" } }, maps);
    expect(r.headers?.request).toEqual([{ name: "x-ok", value: ["ok"] }]);
    expect(r.diagnostics.length).toBe(5);
  });
});
