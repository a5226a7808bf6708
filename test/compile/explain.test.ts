// explain(): the winning route and why each other relevant rule path lost.
import { describe, expect, spyOn, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Compiler } from "../../src/compile/compile.ts";
import type { CompileConfig } from "../../src/compile/config.ts";
import { DEFAULT_COMPILE_CONFIG } from "./config.ts";
import { explain, explainSteps, normaliseRequest, type ExplainCandidate, type ExplainRequest } from "../../src/compile/explain.ts";
import { EXPLAIN_LIMITS } from "../../src/compile/explain-types.ts";
import { syntheticSnapshot } from "./scale.ts";
import { loadFixture, snapshotOf } from "./snapshot.ts";
import type { ConfigMap } from "../../src/model/schemas.ts";
import type { Snapshot } from "../../src/store/types.ts";
import { createCertificate } from "../tls/pki.ts";
import { NOT_IMPLEMENTED } from "../../src/annotations/not-implemented.ts";

function fixture(name: string) {
  const fx = loadFixture(readFileSync(join(import.meta.dir, "..", "fixtures", `${name}.yaml`), "utf8"));
  return { snapshot: fx.snapshot, config: { ...DEFAULT_COMPILE_CONFIG, ...fx.config } as CompileConfig };
}
/** The snapshot with these Secrets' tls.crt and tls.key replaced (a new resourceVersion, as an edit makes). */
function withPems(snapshot: Snapshot, pems: Record<string, { certPem: string; keyPem: string }>): Snapshot {
  const secrets = new Map(snapshot.secrets);
  for (const [key, p] of Object.entries(pems)) {
    const { data: _data, ...old } = secrets.get(key)!;
    secrets.set(key, { ...old, metadata: { ...old.metadata, resourceVersion: "real" }, stringData: { "tls.crt": p.certPem, "tls.key": p.keyPem } });
  }
  return { ...snapshot, secrets };
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

  // nginx's ngx_http_upstream_send_response sets r->limit_rate = 0 for an unbuffered answer.
  test("says limit-rate has no effect on an Ingress whose answers are unbuffered", () => {
    const ing = (name: string, buffering: string) =>
      `kind: Ingress
apiVersion: networking.k8s.io/v1
metadata:
  name: ${name}
  namespace: default
  annotations:
    nginx.ingress.kubernetes.io/limit-rate: "90"
${buffering}spec:
  ingressClassName: portico
  rules: [{ host: ${name}.test, http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: s, port: { number: 80 } } } }] } }]
`;
    const fx = loadFixture(`${ing("plain", "")}---\n${ing("held", '    nginx.ingress.kubernetes.io/proxy-buffering: "on"\n')}`);
    const text = (host: string) => explain(fx.snapshot, DEFAULT_COMPILE_CONFIG, { host, path: "/", scheme: "http" }).annotations.find((a) => a.name.endsWith("limit-rate"))!.text;
    expect(text("plain.test")).toContain("as in ingress-nginx, limit-rate paces only buffered answers: set proxy-buffering: on");
    expect(text("held.test")).not.toContain("No effect");
  });

  test("names the matched Ingress's ingress-nginx annotations with their registry status", () => {
    // One the registry says is not implemented, whichever that is when the test runs.
    const missing = NOT_IMPLEMENTED.find((a) => a.family !== "snippets")!.nginx[0]!;
    const fx = loadFixture(
      `kind: Ingress
apiVersion: networking.k8s.io/v1
metadata:
  name: shaped
  namespace: default
  annotations:
    nginx.ingress.kubernetes.io/proxy-body-size: 8m
    nginx.ingress.kubernetes.io/proxy-read-timeout: "30"
    ${missing}: "x"
    portico.dev/response-headers: "X-A: 1"
    example.com/not-ours: x
spec:
  ingressClassName: portico
  rules: [{ host: shaped.test, http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: s, port: { number: 80 } } } }] } }]
`,
    );
    const r = explain(fx.snapshot, DEFAULT_COMPILE_CONFIG, { host: "shaped.test", path: "/x", scheme: "http" });
    const status = Object.fromEntries(r.annotations.map((a) => [a.name, a.status]));
        // Per value: an explicit body size is served as ingress-nginx serves it; proxy-read-timeout
    // differs for every value (it bounds the response headers only).
    expect(status).toEqual({
      [missing]: "not-served", "nginx.ingress.kubernetes.io/proxy-body-size": "same",
      "nginx.ingress.kubernetes.io/proxy-read-timeout": "differs", "portico.dev/response-headers": "portico",
    });
    expect(r.annotations.find((a) => a.name.endsWith("proxy-body-size"))!.text).toBe("served the same");
    expect(r.annotations.find((a) => a.name.endsWith("proxy-read-timeout"))!.text).toContain("response headers");
    // No matched Ingress: nothing to list.
    expect(explain(fx.snapshot, DEFAULT_COMPILE_CONFIG, { host: "nowhere.test", path: "/", scheme: "http" }).annotations).toEqual([]);
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

  test("--disable-catch-all: an Ingress with spec.defaultBackend is not served, and explain says why", () => {
    const docs = [
      { apiVersion: "networking.k8s.io/v1", kind: "IngressClass", metadata: { name: "portico" }, spec: { controller: "portico.dev/ingress-controller" } },
      {
        apiVersion: "networking.k8s.io/v1", kind: "Ingress", metadata: { name: "catch-all", namespace: "default" },
        spec: {
          ingressClassName: "portico", defaultBackend: { service: { name: "web", port: { number: 80 } } },
          rules: [{ host: "rules.test", http: { paths: [{ path: "/", pathType: "Prefix", backend: { service: { name: "web", port: { number: 80 } } } }] } }],
        },
      },
    ].map((o) => JSON.stringify(o)).join("\n---\n");
    const { snapshot } = loadFixture(docs);
    const r = explain(snapshot, { ...DEFAULT_COMPILE_CONFIG, disableCatchAll: true }, { host: "rules.test", path: "/", scheme: "http" });
    expect(r.outcome).toBe("404");
    expect(r.candidates.find((x) => x.ingress === "default/catch-all")?.reason).toStartWith("not served (--disable-catch-all): spec.defaultBackend is set");
    expect(explain(snapshot, DEFAULT_COMPILE_CONFIG, { host: "rules.test", path: "/", scheme: "http" }).outcome).toBe("route");
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

  test("https: certificate chosen by SNI (exact > wildcard > default), each one the listener takes", () => {
    const fx = fixture("tls");
    const pem = (name: string) => createCertificate({ subjectCN: name, sans: [name] });
    const snapshot = withPems(fx.snapshot, { "shop/shop-tls": pem("shop.test"), "shop/wild-tls": pem("*.apps.test"), "portico/default-cert": pem("default.test") });
    const at = (host: string) => explain(snapshot, fx.config, { host, path: "/", scheme: "https" }).certificate;
    expect(at("shop.test")).toMatchObject({ via: "exact", secret: "shop/shop-tls", hasPem: true });
    // A name no Ingress has rules for: SNI picks the `*.apps.test` binding.
    expect(at("z.apps.test")).toMatchObject({ via: "wildcard", host: "*.apps.test", secret: "shop/wild-tls" });
    // A rule host of shop/shop that no entry lists exactly: extractTLSSecretName's second pass
    // reads the certificates, and wild-tls's names it.
    expect(at("a.apps.test")).toMatchObject({ via: "exact", secret: "shop/wild-tls", ingress: "shop/shop", matchedBy: "certificate" });
    // Two labels under *.apps.test: no certificate names it, so createServers' default certificate.
    expect(at("a.b.apps.test")).toMatchObject({ via: "default", secret: "portico/default-cert", ingress: "shop/shop", matchedBy: "none" });
    expect(at("missing.test")).toMatchObject({ via: "exact", hasPem: false });
    expect(explain(snapshot, fx.config, { host: "shop.test", path: "/", scheme: "http" }).certificate).toBeNull();
  });

  test("https: a Secret the listener's PEM check refuses is not shown as served; the next certificate in line is", () => {
    const fx = fixture("tls");
    const shop = createCertificate({ subjectCN: "shop.test", sans: ["shop.test"] });
    const other = createCertificate({ subjectCN: "shop.test", sans: ["shop.test"] });
    const def = createCertificate({ subjectCN: "default.test", sans: ["default.test"] });
    // tls.key of another key pair: tls/sni.ts serves the default certificate for shop.test.
    const mismatched = withPems(fx.snapshot, { "shop/shop-tls": { certPem: shop.certPem, keyPem: other.keyPem }, "portico/default-cert": def });
    const r = explain(mismatched, fx.config, { host: "shop.test", path: "/", scheme: "https" });
    expect(r.certificate).toMatchObject({ via: "default", secret: "portico/default-cert", unusable: [{ secret: "shop/shop-tls", reason: "tls.key does not match the first certificate in tls.crt" }] });
    expect(r.tls?.entry).toEqual({ via: "default", host: "" });
    // The fixture's own PEMs do not parse at all: neither the host's nor the default's serves,
    // so the generated certificate does (tls/default-cert.ts pickDefaultCertificate).
    expect(explain(fx.snapshot, fx.config, { host: "shop.test", path: "/", scheme: "https" }).certificate).toMatchObject({
      via: "generated-default",
      secret: null,
      unusable: [
        { secret: "shop/shop-tls", reason: "certificate 1 in tls.crt does not parse" },
        { secret: "portico/default-cert", reason: "tls.crt holds no PEM CERTIFICATE block" },
      ],
    });
  });

  test("default backend: used when nothing matches, losers reported", () => {
    const { snapshot, config } = fixture("default-backend");
    // d.test is first's host: its implicit "/" location sends to first's own spec.defaultBackend
    // (ingress-nginx controller.go createServers, `un`); a host nobody names gets the default route.
    expect(explain(snapshot, config, { host: "nowhere.test", path: "/", scheme: "http" }).outcome).toBe("default");
    const r = explain(snapshot, config, { host: "d.test", path: "/other", scheme: "http" });
    expect(r.outcome).toBe("implicit-root");
    expect(r.match?.ingress).toBe("default/first");
    expect(brief(r.candidates)).toEqual(
      expect.arrayContaining(["default/first defaultBackend / matched", "default/second defaultBackend / conflict-loser"]),
    );
    expect(JSON.parse(JSON.stringify(r))).toEqual(r);
  });
});

/** A Map that counts every read of its contents (a compile walks the snapshot's Ingresses). */
class CountingMap<K, V> extends Map<K, V> {
  reads = 0;
  override get(k: K): V | undefined {
    this.reads++;
    return super.get(k);
  }
  override has(k: K): boolean {
    this.reads++;
    return super.has(k);
  }
  override entries(): MapIterator<[K, V]> {
    this.reads++;
    return super.entries();
  }
  override keys(): MapIterator<K> {
    this.reads++;
    return super.keys();
  }
  override values(): MapIterator<V> {
    this.reads++;
    return super.values();
  }
  override forEach(f: (v: V, k: K, m: Map<K, V>) => void): void {
    this.reads++;
    super.forEach(f);
  }
  override [Symbol.iterator](): MapIterator<[K, V]> {
    this.reads++;
    return super[Symbol.iterator]();
  }
}

describe("explain reuses the compile of the live table", () => {
  const requests: ExplainRequest[] = [
    { host: "c.test", path: "/app/1", scheme: "http" },
    { host: "c.test", path: "/other", scheme: "https" },
    { host: "nomatch.test", path: "/", scheme: "http" },
  ];

  test("with the Compiler that compiled the snapshot: no compile, no read of its Ingresses, the answer of a fresh compile", () => {
    const { snapshot, config } = fixture("conflicts");
    const ingresses = new CountingMap(snapshot.ingresses);
    const counted = { ...snapshot, ingresses };
    const compiler = new Compiler(config);
    compiler.compile(counted);
    const compiles = spyOn(compiler, "compile");
    ingresses.reads = 0;
    for (const q of requests) {
      const got = explain(counted, config, q, compiler);
      expect(got).toEqual(explain(snapshot, config, q));
    }
    expect(explain(counted, config, requests[0]!, compiler).match?.ingress).toBe("team-b/older");
    expect(compiles).toHaveBeenCalledTimes(0);
    expect(ingresses.reads).toBe(0);

    // Another snapshot (the older Ingress deleted): compiled once, then explained from it.
    const without = new Map([...snapshot.ingresses].filter(([, ing]) => ing.metadata.name !== "older"));
    const next = { ...snapshot, ingresses: without };
    const after = explain(next, config, requests[0]!, compiler);
    expect(compiles).toHaveBeenCalledTimes(1);
    expect(after.match?.ingress).toBe("default/newer");
    expect(after).toEqual(explain(next, config, requests[0]!));
    explain(next, config, requests[1]!, compiler);
    expect(compiles).toHaveBeenCalledTimes(1);
  });

  test("explainSteps pauses between steps at scale and gives explain's answer", () => {
    const snapshot = syntheticSnapshot(3000);
    const compiler = new Compiler(DEFAULT_COMPILE_CONFIG);
    compiler.compile(snapshot);
    const q: ExplainRequest = { host: "app-7.example.com", path: "/api/v1/items", scheme: "https" };
    const steps = explainSteps(snapshot, DEFAULT_COMPILE_CONFIG, q, compiler);
    let pauses = 0;
    let r = steps.next();
    for (; !r.done; r = steps.next()) pauses++;
    // 6,000 rule paths: a pause after every 2,000 at least.
    expect(pauses).toBeGreaterThanOrEqual(2);
    expect(r.value).toEqual(explain(snapshot, DEFAULT_COMPILE_CONFIG, q));
    expect(r.value.match).toMatchObject({ ingress: "team-7/app-7", path: "/api/v1/items", pathType: "Exact" });
  });

  test("a compile during a pause does not change the answer being built", () => {
    const snapshot = syntheticSnapshot(3000);
    const compiler = new Compiler(DEFAULT_COMPILE_CONFIG);
    compiler.compile(snapshot);
    const q: ExplainRequest = { host: "nomatch.test", path: "/api/v0/items", scheme: "http" };
    const want = explain(snapshot, DEFAULT_COMPILE_CONFIG, q);
    const steps = explainSteps(snapshot, DEFAULT_COMPILE_CONFIG, q, compiler);
    steps.next();
    // 100 Ingresses deleted, too few for a bulk rebuild: the compiler's lists change in place.
    const ingresses = new Map([...snapshot.ingresses].filter((_, i) => i % 30 !== 0));
    compiler.compile({ ...snapshot, ingresses });
    let r = steps.next();
    while (!r.done) r = steps.next();
    expect(r.value).toEqual(want);
  });
});

describe("explain's limits", () => {
  test("at most 50 candidates per verdict are listed; the others are counted", () => {
    const snapshot = syntheticSnapshot(120);
    // Every Ingress has a Prefix "/" rule on its own host: 120 host mismatches.
    const r = explain(snapshot, DEFAULT_COMPILE_CONFIG, { host: "nomatch.test", path: "/", scheme: "http" });
    const mismatches = r.candidates.filter((c) => c.verdict === "host-mismatch");
    expect(mismatches).toHaveLength(EXPLAIN_LIMITS.candidatesPerVerdict);
    expect(r.omittedCandidates).toEqual({ "host-mismatch": 120 - EXPLAIN_LIMITS.candidatesPerVerdict });
    // The first ones in priority order (oldest first).
    expect(mismatches[0]?.ingress).toBe("team-0/app-0");
    const small = fixture("precedence");
    expect(explain(small.snapshot, small.config, { host: "p.test", path: "/foo/bar", scheme: "http" }).omittedCandidates).toEqual({});
  });

  test("a host or path longer than the limits is refused", () => {
    const { snapshot, config } = fixture("precedence");
    const host = "a".repeat(EXPLAIN_LIMITS.host + 1);
    expect(() => explain(snapshot, config, { host, path: "/", scheme: "http" })).toThrow(RangeError);
    const path = `/${"a".repeat(EXPLAIN_LIMITS.path)}`;
    expect(() => explain(snapshot, config, { host: "p.test", path, scheme: "http" })).toThrow(RangeError);
    expect(explain(snapshot, config, { host: "p.test", path: path.slice(0, EXPLAIN_LIMITS.path), scheme: "http" }).outcome).toBe("route");
  });
});

describe("explain in ingress-nginx's regex mode (test/fixtures/regex.yaml)", () => {
  const { snapshot, config } = fixture("regex");

  test("the longest location wins over the plain path it shadows, which is outranked, not mismatched", () => {
    const r = explain(snapshot, config, { host: "r.test", path: "/foo/bar/1", scheme: "http" });
    expect(r.match?.ingress).toBe("default/b-regex");
    expect(r.regex?.location).toEqual({ path: "/foo/bar/(.+)", origin: "as-written", pattern: "^/foo/bar/(.+)", index: 1 });
    expect(r.regex?.groups).toEqual(["/foo/bar/1", "1"]);
    // rewrite-target /$1 and x-forwarded-prefix /foo.
    expect(r.rewrite).toEqual({ target: "/$1", outcome: "path", path: "/1", xForwardedPrefix: "/foo" });
    const plain = r.candidates.find((c) => c.ingress === "default/a-plain" && c.path === "/foo/bar");
    expect(plain?.verdict).toBe("outranked");
    expect(plain?.reason).toContain('location ~* "^/foo/bar/(.+)" (default/b-regex) comes first');
    expect(brief(r.candidates)).toEqual(
      expect.arrayContaining([
        "default/a-plain Exact /Header path-mismatch",
        "default/b-regex Exact /Header conflict-loser",
        "default/b-regex Prefix /(a)\\1 invalid",
        "default/c-variable Prefix /var/(.*) invalid",
      ]),
    );
  });

  test("no location: the default route, and the decoded path the locations ran on", () => {
    const r = explain(snapshot, config, { host: "r.test", path: "/%7Ea%20b", scheme: "http" });
    expect(r.outcome).toBe("404");
    expect(r.regex).toEqual({ matchedAgainst: "/~a b", locations: 9, location: { path: "/", origin: "implicit-root", pattern: "^/", index: 8 }, groups: ["/"], named: {} });
    expect(r.rewrite).toBeNull();
  });

  test("a host not in regex mode has no regex section; its rule paths are shown in the routed form", () => {
    const r = explain(snapshot, config, { host: "l.test", path: "/café", scheme: "http" });
    expect(r.regex).toBeNull();
    expect(r.match?.path).toBe("/caf%C3%A9");
    expect(brief(r.candidates)).toContain("default/d-literal Prefix /a;b invalid");
  });
});

test("explain says what Portico speaks to the pods: a GRPC backend is HTTP/2 with prior knowledge", () => {
  const yaml = (protocol: string) => `
kind: Service
apiVersion: v1
metadata: { name: api, namespace: default }
spec: { ports: [{ name: grpc, port: 50051 }] }
---
kind: Ingress
apiVersion: networking.k8s.io/v1
metadata: { name: api, namespace: default, annotations: { nginx.ingress.kubernetes.io/backend-protocol: ${protocol} } }
spec:
  ingressClassName: portico
  rules: [{ host: api.test, http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: api, port: { number: 50051 } } } }] } }]
`;
  for (const [protocol, scheme, wire] of [["GRPC", "grpc", "h2c"], ["GRPCS", "grpcs", "h2+tls"], ["HTTPS", "https", "h1+tls"], ["HTTP", "http", "h1"]] as const) {
    const fx = loadFixture(yaml(protocol));
    const r = explain(fx.snapshot, { ...DEFAULT_COMPILE_CONFIG, ...fx.config } as CompileConfig, { host: "api.test", path: "/pkg.Svc/Call", scheme: "https" });
    expect(r.match?.backend).toMatchObject({ scheme, protocol: wire, id: `default/api:50051${scheme === "http" ? "" : `#${scheme}`}` });
  }
});

describe("Compiler.inspect", () => {
  // explain must see the table the proxy serves: compile() puts add-headers and
  // proxy-set-headers on it (docs/design.md, "ingress-nginx's ConfigMap"), so the view of the
  // snapshot just compiled, which is not compiled again, carries them and their warnings too.
  test("the snapshot just compiled: add-headers, proxy-set-headers and their diagnostics as compile() gives them", () => {
    const addMap: ConfigMap = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "add", namespace: "ns" }, data: { "X-Added": "yes" } };
    const snapshot = snapshotOf([{ kind: "ConfigMap", object: addMap }]);
    const config: CompileConfig = { ...DEFAULT_COMPILE_CONFIG, addHeaders: { namespace: "ns", name: "add" }, proxySetHeaders: { namespace: "ns", name: "missing" } };
    const compiler = new Compiler(config);
    const compiled = compiler.compile(snapshot);
    expect(compiled.table.globalHeaders?.response).toEqual([{ name: "x-added", value: ["yes"] }]);
    expect(compiled.diagnostics.map((d) => `${d.kind} ${d.namespace}/${d.name} ${d.reason}`)).toContain("ConfigMap ns/missing InvalidConfigKey");
    const seen = compiler.inspect(snapshot, []);
    expect(seen.result.table.globalHeaders).toEqual(compiled.table.globalHeaders);
    expect(seen.result.diagnostics).toEqual(compiled.diagnostics);
  });
});
