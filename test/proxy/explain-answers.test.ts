// Explain says what the proxy answers, and the proxy answers it: for every fixture the golden
// compile tests use (test/fixtures/*.yaml) and the ingress-nginx migration set
// (test/fixtures/migrate/manifests, served with --ingress-nginx-compat), each served host and
// path of the compiled table is explained and then sent for real, with no credentials and no
// special headers, from 127.0.0.1, over HTTP and as the HTTPS port's handler sees it, to a real
// listener running the proxy's handler. Status,
// Location, the basic-auth challenge and the backend that got the request must be what
// explain's `response` says, and a pod's request line, Host and the route's fields what its
// `upstream` says (compile/answer.ts; docs/design.md "Explain").
//
// The fixtures' pod addresses are moved to one raw-socket backend on loopback, so a proxied
// request really reaches a pod; names (ExternalName Services, the auth-url host) are never
// resolved: the resolvers given to the handler refuse at once, so an ExternalName route is
// left out and an auth service never answers (the proxy's 500, one of the outcomes explain
// lists for "depends").
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import net from "node:net";
import { join } from "node:path";
import { compile, Compiler } from "../../src/compile/compile.ts";
import type { CompileConfig } from "../../src/compile/config.ts";
import { explain, type ExplainResult } from "../../src/compile/explain.ts";
import { KIND_STAGES } from "../../src/compile/answer.ts";
import { parseArgs } from "../../src/config/parse.ts";
import { silentLogger } from "../../src/log/logger.ts";
import type { EndpointSlice } from "../../src/model/schemas.ts";
import { ProxyError } from "../../src/http/errors.ts";
import type { ExternalResolver } from "../../src/proxy/upstream/external.ts";
import { createProxyHandler } from "../../src/proxy/pipeline/handler.ts";
import { POLICY_KINDS } from "../../src/kinds/registry.ts";
import { startHttpListener } from "../../src/proxy/pipeline/listener.ts";
import type { AccessRecord } from "../../src/proxy/types.ts";
import { RejectedRequest } from "../../src/request/rejected.ts";
import { loadOnce } from "../../src/runtime/load.ts";
import type { Snapshot } from "../../src/store/types.ts";
import { otherWwwName } from "../../src/table/build.ts";
import { lookup } from "../../src/table/lookup.ts";
import type { GatewayEntry, RouteTable } from "../../src/table/types.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";
import { loadFixture } from "../compile/snapshot.ts";
import { externalAuthWith, testConfig } from "./helpers.ts";
import { namedBackend, type RawBackend } from "./raw.ts";

const FIXTURES = join(import.meta.dir, "..", "fixtures");
const MIGRATE_MANIFESTS = join(FIXTURES, "migrate", "manifests");
/** Requests per source at most (the largest fixture has far fewer), so the suite stays bounded. */
const MAX_REQUESTS = 200;

/** A resolver that never resolves: no name leaves the machine, and the proxy fails at once. */
const NO_DNS: ExternalResolver = {
  target: async () => {
    throw new ProxyError("UpstreamConnect", "names are not resolved in this test");
  },
  forget() {},
};

let be: RawBackend;
let table: RouteTable | null = null;
const records: AccessRecord[] = [];
/**
 * One listener per scheme the handler serves: "https" is the handler of the TLS port (the
 * client's scheme is https, no HTTPS redirect) behind a plain socket, so the raw client stays
 * simple; it offers no client certificate, as a client without one.
 */
const servers = new Map<"http" | "https", ReturnType<typeof startHttpListener>>();
let redirectCode: 301 | 302 | 307 | 308 = 308;

beforeAll(async () => {
  be = await namedBackend("pod");
  const kinds = new Map(POLICY_KINDS);
  kinds.set("external-auth", externalAuthWith({ resolver: NO_DNS }));
  for (const scheme of ["http", "https"] as const) {
    const handler = createProxyHandler({
      config: testConfig(),
      table: () => table as RouteTable,
      lookup,
      log: silentLogger,
      scheme,
      external: NO_DNS,
      policyKinds: kinds,
      hooks: { onRequestDone: (r) => void records.push(r) },
    });
    servers.set(scheme, startHttpListener({ hostname: "127.0.0.1", port: 0, handler }));
  }
  redirectCode = testConfig().httpRedirectCode;
});
afterAll(async () => {
  for (const s of servers.values()) await s.stop(true);
  await be.stop();
});

/** The snapshot with every endpoint moved to the raw backend (conditions kept). */
function onLoopback(s: Snapshot): Snapshot {
  const endpointSlices = new Map<string, EndpointSlice[]>();
  for (const [k, slices] of s.endpointSlices) {
    endpointSlices.set(
      k,
      slices.map((sl) => {
        const c = structuredClone(sl) as { addressType?: string; endpoints?: { addresses: string[] }[]; ports?: { port?: number }[] };
        c.addressType = "IPv4";
        for (const e of c.endpoints ?? []) e.addresses = ["127.0.0.1"];
        for (const p of c.ports ?? []) p.port = be.port;
        return c as unknown as EndpointSlice;
      }),
    );
  }
  return { ...s, endpointSlices };
}

interface Source {
  readonly name: string;
  readonly snapshot: Snapshot;
  readonly config: CompileConfig;
  readonly extra: readonly { host: string; path: string }[];
}

function fixtureSources(): Source[] {
  return readdirSync(FIXTURES)
    .filter((f) => f.endsWith(".yaml"))
    .sort()
    .map((f) => {
      const fx = loadFixture(readFileSync(join(FIXTURES, f), "utf8"));
      return { name: f, snapshot: fx.snapshot, config: { ...DEFAULT_COMPILE_CONFIG, ...fx.config } as CompileConfig, extra: fx.requests };
    });
}

/** The requests to send: every host entry's route paths (and "/"), the www other names, a host nobody serves, and the fixture's own. */
function requestsOf(t: RouteTable, extra: Source["extra"]): { host: string; path: string }[] {
  const out = new Map<string, { host: string; path: string }>();
  const add = (host: string, path: string) => out.set(`${host} ${path}`, { host, path });
  const entries = [...t.exact.values()].map((e) => ({ e, host: e.host }));
  for (const e of t.wildcard.values()) entries.push({ e, host: `x.${e.host.slice(2)}` });
  if (t.any !== null) entries.push({ e: t.any, host: "hostless.example" });
  for (const { e, host } of entries) {
    add(host, "/");
    for (const r of e.routes) {
      // A regex host's paths are regexes: the plain ones are sent as they are, the others
      // through the fixture's own requests.
      if (e.regex !== null && !/^[A-Za-z0-9/_.-]*$/.test(r.path)) continue;
      add(host, r.path);
      if (r.pathType === "Prefix") add(host, `${r.path.endsWith("/") ? r.path : `${r.path}/`}x/`);
    }
    if (e.wwwRedirect !== null) add(otherWwwName(e.host), "/a/");
  }
  // The Gateway API part (asked before the entries above): every listener and route hostname
  // with each rule match's path.
  for (const listeners of t.gateway ? [t.gateway.http, t.gateway.https] : []) {
    for (const [lkey, hosts] of listeners) {
      const listenerHost = lkey === "*" ? "hostless.example" : lkey.startsWith("*.") ? `x.${lkey.slice(2)}` : lkey;
      const lists: [string, readonly GatewayEntry[]][] = [...hosts.exact.entries(), ...hosts.wildcards.map(([h, l]) => [`x.${h.slice(2)}`, l] as [string, readonly GatewayEntry[]])];
      if (hosts.any !== null) lists.push([listenerHost, hosts.any]);
      for (const [host, entries] of lists) {
        add(host, "/");
        for (const e of entries) {
          const path = e.choices[0]?.match.route.path ?? "/";
          add(host, path);
          if (e.match.pathType === "PathPrefix") add(host, `${path.endsWith("/") ? path : `${path}/`}x/`);
        }
      }
    }
  }
  add("nobody-serves.example", "/");
  for (const r of extra) add(r.host, r.path);
  return [...out.values()].slice(0, MAX_REQUESTS);
}

interface Real {
  readonly status: number;
  readonly location: string | null;
  readonly challenge: string | null;
  readonly record: AccessRecord | undefined;
  /** The head the pod got (request line and fields), when one got the request. */
  readonly got: string | null;
  /** The answer's fields by lowercased name (the last of a repeated one). */
  readonly fields: ReadonlyMap<string, string>;
}

async function send(scheme: "http" | "https", host: string, path: string): Promise<Real> {
  const port = servers.get(scheme)?.port as number;
  const before = records.length;
  const hits = be.hits.length;
  const raw = await new Promise<string>((resolve) => {
    const chunks: Buffer[] = [];
    const sock = net.connect(port, "127.0.0.1", () => sock.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`));
    sock.on("data", (d: Buffer) => chunks.push(d));
    sock.on("close", () => resolve(Buffer.concat(chunks).toString("latin1")));
    sock.on("error", () => {});
  });
  const head = raw.slice(0, raw.indexOf("\r\n\r\n"));
  return {
    status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0),
    location: /\r\nlocation: ([^\r]*)/i.exec(head)?.[1] ?? null,
    challenge: /\r\nwww-authenticate: ([^\r]*)/i.exec(head)?.[1] ?? null,
    record: records[before],
    got: be.hits.length > hits ? (be.hits.at(-1) as { head: string }).head : null,
    fields: new Map(head.split("\r\n").slice(1).map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()] as const)),
  };
}

/** What explain predicts, in the terms a real answer can be compared with. */
type Verdict =
  | { kind: "400" }
  | { kind: "proxied"; backends: readonly string[]; by: string; upstream: ExplainResult["response"]["upstream"] }
  | { kind: "answer"; status: number; location: string | null; challenge: string | null }
  | { kind: "depends"; signin: string | null };

function predict(r: ExplainResult): Verdict {
  const a = r.response;
  // `answers` is the one-word form of the same response.
  if (r.match !== null) expect(r.match.answers as string).toBe(a.kind === "proxied" || a.kind === "depends" ? a.kind : String(a.status));
  if (a.kind === "proxied") return { kind: "proxied", backends: a.backends ?? [], by: a.by, upstream: a.upstream };
  if (a.kind === "depends") return { kind: "depends", signin: a.location ?? null };
  return { kind: "answer", status: a.status as number, location: a.location ?? null, challenge: a.kind === "challenge" ? `Basic realm="${a.realm}"` : null };
}

/** Compare; returns a label of what was compared, for the per-kind counts. */
function agree(v: Verdict, real: Real, externalNames: ReadonlySet<string>, httpBackends: ReadonlySet<string>, what: string, host: string): string {
  switch (v.kind) {
    case "400":
      expect(real.status, what).toBe(400);
      return "400";
    case "answer":
      expect({ status: real.status, location: real.location, challenge: real.challenge }, what).toEqual({ status: v.status, location: v.location, challenge: v.challenge });
      return String(v.status);
    case "depends":
      // The auth service is never reached here: the proxy's 500 ("anything else, or no answer").
      expect(real.status, what).toBe(500);
      return "depends";
    case "proxied": {
      const service = real.record?.service ?? null;
      expect(v.backends, what).toContain(service as string);
      if (externalNames.has(service as string)) return "skipped (ExternalName)";
      // Every proxied route of the fixtures speaks HTTP to its pod (a TLS or gRPC one could not
      // talk to the raw backend): the pod's 200. A fixture that adds another must say here
      // what it expects instead.
      expect([service, httpBackends.has(service as string)], what).toEqual([service, true]);
      expect(real.status, what).toBe(200);
      // What explain says the pod receives: the request line, the Host and the route's fields
      // (an error backend's request is not the route's: explain names that backend only).
      if (v.by === "proxy") expect(v.upstream, `${what}: explain says what the pod receives`).toBeDefined();
      if (real.got !== null && v.upstream !== undefined) {
        const fields = new Map(real.got.split("\r\n").slice(1).map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()] as const));
        expect(real.got.split("\r\n")[0], what).toBe(`GET ${v.upstream.path} HTTP/1.1`);
        expect(fields.get("host"), what).toBe(v.upstream.host ?? host);
        for (const [name, value] of Object.entries(v.upstream.headers)) expect(fields.get(name) ?? null, `${what}: ${name}`).toBe(value);
        return "proxied (upstream checked)";
      }
      return "proxied";
    }
  }
}

async function checkSource(src: Source): Promise<Record<string, number>> {
  const snapshot = onLoopback(src.snapshot);
  const result = compile(snapshot, src.config);
  table = result.table;
  const externalNames = new Set<string>();
  const httpBackends = new Set<string>();
  const note = (b: { id: string; externalName: boolean; scheme: string }) => {
    if (b.externalName) externalNames.add(b.id);
    if (b.scheme === "http") httpBackends.add(b.id);
  };
  const all = [...result.table.exact.values(), ...result.table.wildcard.values(), ...(result.table.any ? [result.table.any] : [])];
  for (const e of all) {
    for (const r of e.routes) {
      note(r.backend);
      if (r.canary) note(r.canary.backend);
      if (r.fallback) note(r.fallback);
      if (r.errorPages?.backend) note(r.errorPages.backend);
    }
  }
  if (result.table.defaultRoute) note(result.table.defaultRoute.backend);
  for (const listeners of result.table.gateway ? [result.table.gateway.http, result.table.gateway.https] : []) {
    for (const hosts of listeners.values()) {
      for (const list of [...hosts.exact.values(), ...hosts.wildcards.map(([, l]) => l), ...(hosts.any ? [hosts.any] : [])]) {
        for (const e of list) for (const c of e.choices) note(c.match.route.backend);
      }
    }
  }
  const counts: Record<string, number> = {};
  const config = { ...src.config, httpRedirectCode: redirectCode, httpsPort: testConfig().httpsPort };
  for (const { host, path } of requestsOf(result.table, src.extra)) {
    for (const scheme of ["http", "https"] as const) {
      let v: Verdict;
      let claimed: Readonly<Record<string, string | null>> = {};
      try {
        const e = explain(snapshot, config, { host, path, scheme, client: "127.0.0.1" });
        v = predict(e);
        claimed = e.response.headers ?? {};
      } catch (err) {
        if (!(err instanceof RejectedRequest)) throw err;
        v = { kind: "400" };
      }
      const what = `${src.name}: GET ${scheme}://${host}${path} (explain: ${JSON.stringify(v)})`;
      const real = await send(scheme, host, path);
      const label = agree(v, real, externalNames, httpBackends, what, host);
      // The answer's fields explain claims (response-headers, custom-headers on a pod's answer).
      for (const [name, value] of Object.entries(claimed)) expect(real.fields.get(name) ?? null, `${what}: answer field ${name}`).toBe(value);
      if (Object.keys(claimed).length > 0) counts["answer fields checked"] = (counts["answer fields checked"] ?? 0) + 1;
      counts[label] = (counts[label] ?? 0) + 1;
    }
  }
  return counts;
}

describe("explain's response is the proxy's answer", () => {
  const totals: Record<string, number> = {};
  const add = (c: Record<string, number>) => {
    for (const [k, n] of Object.entries(c)) totals[k] = (totals[k] ?? 0) + n;
  };
  for (const src of fixtureSources()) {
    test(src.name, async () => add(await checkSource(src)));
  }
  test("the ingress-nginx migration set (--ingress-nginx-compat)", async () => {
    const o = parseArgs(["routes", "--manifests", MIGRATE_MANIFESTS, "--ingress-nginx-compat"], {});
    if (o.type !== "routes") throw new Error(`routes flags: ${JSON.stringify(o)}`);
    const { snapshot } = await loadOnce(o.config, { log: silentLogger, quiet: silentLogger });
    add(await checkSource({ name: "migrate/manifests", snapshot, config: o.config, extra: [] }));
  });
  test("every kind of answer was compared, not only proxied requests", () => {
    // answers.yaml holds one route per kind of answer (its header says which).
    for (const k of ["proxied (upstream checked)", "answer fields checked", "301", "302", "308", "400", "401", "403", "404", "503", "depends"]) expect(totals[k] ?? 0, k).toBeGreaterThan(0);
  });
});

test("explain knows every policy kind the proxy implements, in the same stage", () => {
  const proxy = Object.fromEntries([...POLICY_KINDS].map(([k, kind]) => [k, kind.stage]));
  expect(KIND_STAGES).toEqual(proxy);
});

test("a refused route, a missing auth Secret and a redirect are not 'proxied' (answers.yaml)", () => {
  const fx = loadFixture(readFileSync(join(FIXTURES, "answers.yaml"), "utf8"));
  const config = { ...DEFAULT_COMPILE_CONFIG, ...fx.config } as CompileConfig;
  const ask = (host: string, path = "/") => explain(fx.snapshot, config, { host, path, scheme: "http" });
  expect(ask("snippet.test").response).toMatchObject({ kind: "refused", status: 503, by: "refuse" });
  expect(ask("snippet.test").response.cause).toContain("server-snippet");
  expect(ask("nosecret.test").response).toMatchObject({ kind: "refused", status: 503, cause: "Secret ans/missing (auth-secret) not found" });
  expect(ask("basic.test").response).toMatchObject({ kind: "challenge", status: 401, realm: "Staff only" });
  expect(ask("moved.test", "/old").response).toMatchObject({ kind: "redirect", status: 301, location: "https://new.example.com/home" });
  expect(ask("away.test").response).toMatchObject({ kind: "redirect", status: 302, location: "https://status.example.com/maintenance" });
  expect(ask("approot.test").response).toMatchObject({ kind: "redirect", status: 302, location: "http://approot.test/app" });
  expect(ask("brand.test", "/a/").response).toMatchObject({ kind: "redirect", status: 308, location: "http://www.brand.test:80/a" });
  expect(ask("secure.test", "/a/").response).toMatchObject({ kind: "redirect", status: 308, location: "https://secure.test/a" });
  // An unknown client is in no allow list.
  expect(ask("office.test").response).toMatchObject({ kind: "refused", status: 403, allowedClients: ["10.0.0.0/8", "192.168.0.0/16"] });
  expect(ask("sso.test", "/me").response).toMatchObject({ kind: "depends", status: null, location: "https://login.example.com/start?rd=$scheme://$http_host$escaped_request_uri" });
  expect(ask("dead.test").response).toMatchObject({ kind: "refused", status: 503, by: "endpoints" });
  // The default-backend annotation's Service takes the requests (its id names no port: compile/backends.ts).
  expect(ask("fallback.test").response).toMatchObject({ kind: "proxied", backends: ["ans/next:0"] });
  expect(ask("release.test").response).toMatchObject({ kind: "proxied", backends: ["ans/next:80"] });
  expect(ask("nobody.test").response).toMatchObject({ kind: "refused", status: 404 });
  // No client certificate (the explained request has none): 400, or the error page's 302.
  expect(ask("mtls.test").response).toMatchObject({ kind: "refused", status: 400, by: "client-cert" });
  expect(ask("mtls-page.test").response).toMatchObject({ kind: "redirect", status: 302, location: "https://help.example.com/certificates" });
  expect(ask("mtls-no-ca.test").response).toMatchObject({ kind: "refused", status: 403, by: "certificate-refuse" });
  expect(ask("snippet.test").match?.answers).toBe("503");
});

test("a request a Gateway API rule answers: explain names the listener, the HTTPRoute, the rule and its answer (gateway.yaml)", () => {
  const fx = loadFixture(readFileSync(join(FIXTURES, "gateway.yaml"), "utf8"));
  const config = { ...DEFAULT_COMPILE_CONFIG, ...fx.config } as CompileConfig;
  const ask = (host: string, path: string) => explain(fx.snapshot, config, { host, path, scheme: "http" });
  const api = ask("app.test", "/api/x");
  expect(api.outcome).toBe("route");
  expect(api.response).toMatchObject({ kind: "proxied", backends: ["gwx/web:80"] });
  expect(api.gateway).toMatchObject({
    port: "http",
    listenerHostname: "*",
    routeHostname: "app.test",
    listeners: [{ gateway: "gwx/edge", listener: "http", port: 80, protocol: "HTTP" }],
    route: "gwx/app",
    ruleIndex: 0,
    matchIndex: 0,
    match: { pathType: "PathPrefix", path: "/api", method: null, headers: [], queryParams: [] },
    choices: [{ backend: "gwx/web:80", weight: 1, answers: "proxied" }],
  });
  // The Ingress's /api path is listed, and loses to the HTTPRoute.
  expect(api.candidates.find((c) => c.ingress === "gwx/legacy" && c.path === "/api")).toMatchObject({ verdict: "outranked" });
  expect(ask("app.test", "/old/page").response).toMatchObject({ kind: "redirect", status: 301, location: "http://new.test/old/page", by: "gateway-redirect" });
  // The listener's declared port (8080), never Portico's own socket port.
  expect(ask("a.b.wild.test", "/v1/x").response).toMatchObject({ kind: "redirect", status: 302, location: "http://a.b.wild.test:8080/v2/x" });
  expect(ask("a.wild.test", "/v1/x").gateway).toMatchObject({ listenerHostname: "*.wild.test", routeHostname: "*.wild.test", route: "gwx/wild", listeners: [{ gateway: "gwx/edge", listener: "wild", port: 8080 }] });
  const gone = ask("app.test", "/gone");
  expect(gone.response).toMatchObject({ kind: "refused", status: 500, by: "gateway-error" });
  expect(gone.diagnostics.map((d) => d.reason)).toContain("RouteRefsNotResolved");
  expect(ask("app.test", "/split").response).toMatchObject({ kind: "proxied", backends: ["gwx/web:80", "gwx/other:80"] });
  expect(ask("app.test", "/split").gateway?.choices).toEqual([
    { backend: "gwx/web:80", weight: 50, answers: "proxied" },
    { backend: "gwx/other:80", weight: 50, answers: "proxied" },
  ]);
  // A header match a plain GET does not meet, and a path no rule has: the Ingress answers.
  for (const path of ["/canary", "/elsewhere"]) {
    const r = ask("app.test", path);
    expect(r.gateway).toBeUndefined();
    expect(r.match?.ingress).toBe("gwx/legacy");
  }
});

test("explain with the controller's compiler sees the Gateway part it compiled", () => {
  const fx = loadFixture(readFileSync(join(FIXTURES, "gateway.yaml"), "utf8"));
  const config = { ...DEFAULT_COMPILE_CONFIG, ...fx.config } as CompileConfig;
  const compiler = new Compiler(config);
  compiler.compile(fx.snapshot);
  expect(explain(fx.snapshot, config, { host: "app.test", path: "/exact", scheme: "http" }, compiler).gateway).toMatchObject({ route: "gwx/app", ruleIndex: 1 });
});
