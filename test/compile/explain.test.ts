// explain(): the winning route and why each other relevant rule path lost.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { DEFAULT_COMPILE_CONFIG, type CompileConfig } from "../../src/compile/config.ts";
import { explain, normaliseRequest, type ExplainCandidate } from "../../src/compile/explain.ts";
import { loadFixture } from "./snapshot.ts";

function fixture(name: string) {
  const fx = loadFixture(readFileSync(join(import.meta.dir, "..", "fixtures", `${name}.yaml`), "utf8"));
  return { snapshot: fx.snapshot, config: { ...DEFAULT_COMPILE_CONFIG, ...fx.config } as CompileConfig };
}
const brief = (cs: readonly ExplainCandidate[]) => cs.map((c) => `${c.ingress} ${c.pathType} ${c.path} ${c.verdict}`);

describe("explain", () => {
  test("normalises host case, port and query", () => {
    expect(normaliseRequest({ host: "Shop.TEST:8443", path: "/a?b=c", scheme: "https" })).toEqual({ host: "shop.test", path: "/a", scheme: "https" });
    expect(normaliseRequest({ host: "[::1]:80", path: "", scheme: "http" })).toEqual({ host: "[::1]", path: "/", scheme: "http" });
  });

  test("precedence: the winner, and longer/Exact reasons for the losers", () => {
    const { snapshot, config } = fixture("precedence");
    const r = explain(snapshot, config, { host: "p.test", path: "/foo/bar", scheme: "http" });
    expect(r.outcome).toBe("route");
    expect(r.match?.pathType).toBe("Exact");
    expect(r.match?.path).toBe("/foo/bar");
    expect(r.match?.answers).toBe("proxied");
    expect(brief(r.candidates)).toEqual(
      expect.arrayContaining([
        "default/precedence Exact /foo/bar matched",
        "default/precedence Prefix /foo/bar outranked",
        "default/precedence Prefix /foo/ outranked",
        "default/precedence Prefix /foo/bar/baz path-mismatch",
      ]),
    );
    const is = r.candidates.find((c) => c.pathType === "Prefix" && c.path === "/foo/bar");
    expect(is?.reason).toContain("Exact /foo/bar beats Prefix at equal length");
    // is.test rules have another host and a matching path only for "/" prefix: host-mismatch.
    expect(brief(r.candidates)).toContain("default/precedence Prefix / host-mismatch");
  });

  test("conflicts name the winner with timestamps", () => {
    const { snapshot, config } = fixture("conflicts");
    const r = explain(snapshot, config, { host: "c.test", path: "/app/1", scheme: "http" });
    expect(r.match?.ingress).toBe("team-b/older");
    const loser = r.candidates.find((c) => c.ingress === "default/newer" && c.path === "/app");
    expect(loser?.verdict).toBe("conflict-loser");
    expect(loser?.reason).toContain("team-b/older (created 2024-01-01T00:00:00Z)");
    expect(r.diagnostics.map((d) => `${d.name} ${d.reason}`)).toContain("newer PathConflict");
  });

  test("not our class: says which branch of class selection", () => {
    const { snapshot, config } = fixture("classes");
    const r = explain(snapshot, config, { host: "field-other.test", path: "/", scheme: "http" });
    expect(r.outcome).toBe("404");
    const c = r.candidates.find((x) => x.ingress === "default/field-other-controller");
    expect(c?.verdict).toBe("not-our-class");
    expect(c?.reason).toContain("ingressClassName");
    expect(c?.reason).toContain("k8s.io/ingress-nginx");
    const none = explain(snapshot, config, { host: "no-class.test", path: "/", scheme: "http" });
    expect(none.candidates.find((x) => x.ingress === "default/no-class")?.reason).toContain("--watch-ingress-without-class");
  });

  test("host tiers: no fallthrough from the chosen exact host", () => {
    const { snapshot, config } = fixture("hosts");
    const r = explain(snapshot, config, { host: "WWW.example.com", path: "/other", scheme: "http" });
    expect(r.outcome).toBe("404");
    expect(r.hostEntry).toBe("www.example.com");
    const wild = r.candidates.find((c) => c.host === "*.example.com");
    expect(wild?.verdict).toBe("host-tier-lost");
    const invalid = r.candidates.find((c) => c.host === "foo.*.com");
    expect(invalid?.verdict).toBe("invalid");
  });

  test("https: certificate chosen by SNI (exact > wildcard > default)", () => {
    const { snapshot, config } = fixture("tls");
    const at = (host: string) => explain(snapshot, config, { host, path: "/", scheme: "https" }).certificate;
    expect(at("shop.test")).toMatchObject({ via: "exact", secret: "shop/shop-tls", hasPem: true });
    expect(at("a.apps.test")).toMatchObject({ via: "wildcard", host: "*.apps.test", secret: "shop/wild-tls" });
    expect(at("a.b.apps.test")).toMatchObject({ via: "default", secret: "portico/default-cert" });
    expect(at("missing.test")).toMatchObject({ via: "exact", hasPem: false });
    expect(explain(snapshot, config, { host: "shop.test", path: "/", scheme: "http" }).certificate).toBeNull();
  });

  test("default backend: used when nothing matches, losers reported", () => {
    const { snapshot, config } = fixture("default-backend");
    const r = explain(snapshot, config, { host: "d.test", path: "/other", scheme: "http" });
    expect(r.outcome).toBe("default");
    expect(r.match?.ingress).toBe("default/first");
    expect(brief(r.candidates)).toEqual(
      expect.arrayContaining(["default/first defaultBackend / matched", "default/second defaultBackend / conflict-loser"]),
    );
    expect(JSON.parse(JSON.stringify(r))).toEqual(r);
  });
});
