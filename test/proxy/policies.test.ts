// Route policies run in the one stage order (docs/design.md, "Annotations and policies"),
// through a real proxy to raw-socket backends that log the request line they receive, over
// HTTP/1.1, h2 and HTTP/3 alike: a stage's answer may not depend on the wire.
import { afterEach, describe, expect, test } from "bun:test";
import type { PolicyKind, PolicyKinds } from "../../src/kinds/types.ts";
import { POLICY_STAGES, type PolicyStage, type StagePolicy } from "../../src/policy/stages.ts";
import type { Backend, RouteTable } from "../../src/table/types.ts";
import { makeBackend, makeTable, startProxyOver, TRANSPORTS, type Transport, type TransportProxy } from "./helpers.ts";
import { testKind } from "./helpers.ts";
import { namedBackend } from "./raw.ts";

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

/** A raw-socket backend that logs each request line and answers 200 with its name; stopped after the test. */
async function backend(name: string) {
  const b = await namedBackend(name);
  cleanup.push(() => b.stop());
  return b;
}

async function start(transport: Transport, table: RouteTable, policyKinds: PolicyKinds): Promise<TransportProxy> {
  const p = await startProxyOver(transport, table, {}, {}, "http", policyKinds);
  cleanup.push(() => p.stop());
  return p;
}

const policy = (stage: PolicyStage, kind: string, params: StagePolicy["params"] = {}): StagePolicy => ({ stage, kind, params });

/** One probe kind per stage: records that it ran; a few act on their parameters. */
function probeKinds(ran: string[], other: Backend): Map<string, PolicyKind> {
  const kinds = new Map<string, PolicyKind>();
  for (const stage of POLICY_STAGES) {
    kinds.set(
      `probe-${stage}`,
      testKind(stage, (params) => (flow) => {
        ran.push(stage);
        if (typeof params.deny === "string" && flow.clientIp === params.deny) {
          return new Response("denied\n", { status: 403, headers: { ...flow.responseHeaders } });
        }
        if (typeof params.redirect === "string") return new Response(null, { status: 302, headers: { location: params.redirect } });
        if (typeof params.rewrite === "string") flow.pathAndQuery = params.rewrite;
        if (params.switchBackend === true) flow.backend = other;
        // An asynchronous step (external authentication will be one) is awaited in its turn.
        return stage === "authentication" ? Promise.resolve(null) : null;
      }),
    );
  }
  return kinds;
}

describe("route policies", () => {
  test("the stage order is ingress-nginx's phase order (NGINX-COMPAT §0.4; nginx.tmpl SERVER and location)", () => {
    // Client certificate (before any phase; the server's AuthTLSError `return 403` ahead of
    // app-root), the server block (app-root, www redirect), the location's rewrite phase
    // (denied 503, CORS preflight, redirects, rewrite-target; Lua's HTTPS redirect and
    // backend), pre-access (limits), access (ranges, then authentication), the proxying.
    expect([...POLICY_STAGES]).toEqual(["certificate", "server", "denied", "cors", "redirects", "rewrite", "backend", "limits", "access", "authentication", "forwarding", "errorPages"]);
  });
});

describe.each(TRANSPORTS)("route policies, over %s", (transport) => {

  test("every stage runs, in the fixed order, whatever order the route lists them in", async () => {
    const a = await backend("a");
    const b = await backend("b");
    const ran: string[] = [];
    const other = makeBackend([b.port], { id: "default/other:80" });
    const stages = [...POLICY_STAGES].reverse().map((s) =>
      policy(s, `probe-${s}`, s === "rewrite" ? { rewrite: "/rewritten?x=1" } : s === "backend" ? { switchBackend: true } : {}),
    );
    const table = makeTable([{ host: "p.test", backend: makeBackend([a.port]), options: { stages } }]);
    const p = await start(transport, table, probeKinds(ran, other));
    const r = await p.request("/original?q=1", { headers: { host: "p.test" } });
    expect(r.status).toBe(200);
    expect(await r.text()).toBe("b");
    expect(ran).toEqual([...POLICY_STAGES]);
    expect(b.lines()).toEqual(["GET /rewritten?x=1 HTTP/1.1"]);
    expect(a.lines()).toEqual([]);
    expect(p.records[0]?.service).toBe("default/other:80");
    expect(p.records[0]?.path).toBe("/original");
  });

  test("a stage's answer ends the request there: later stages and the backend never see it", async () => {
    const a = await backend("a");
    const ran: string[] = [];
    const table = makeTable([
      { host: "deny.test", backend: makeBackend([a.port]), options: { stages: POLICY_STAGES.map((s) => policy(s, `probe-${s}`, s === "access" ? { deny: "127.0.0.1" } : {})) } },
      { host: "redir.test", backend: makeBackend([a.port]), options: { stages: POLICY_STAGES.map((s) => policy(s, `probe-${s}`, s === "redirects" ? { redirect: "https://elsewhere.test/" } : {})) } },
    ]);
    const p = await start(transport, table, probeKinds(ran, makeBackend([a.port])));
    const denied = await p.request("/", { headers: { host: "deny.test" } });
    expect(denied.status).toBe(403);
    expect(denied.headers.get("x-request-id")).toBe(p.records[0]!.requestId); // the stage spread responseHeaders
    expect(ran).toEqual(POLICY_STAGES.slice(0, POLICY_STAGES.indexOf("access") + 1));
    ran.length = 0;
    const moved = await p.request("/", { headers: { host: "redir.test" }, redirect: "manual" });
    expect(moved.status).toBe(302);
    expect(moved.headers.get("location")).toBe("https://elsewhere.test/");
    // ingress-nginx's order (nginx.tmpl: `return` in the location's rewrite phase, allow lists
    // and auth in its access phase): a redirect answers before limits, ranges and auth run.
    expect(ran).toEqual(["certificate", "server", "denied", "cors", "redirects"]);
    expect(a.lines()).toEqual([]);
    expect(p.records.map((r) => r.status)).toEqual([403, 302]);
  });

  test("the HTTPS redirect runs after the rewrite stage, the no-endpoints 503 after the backend stage, both before limits and access", async () => {
    const a = await backend("a");
    const ran: string[] = [];
    const all = POLICY_STAGES.map((s) => policy(s, `probe-${s}`));
    const table = makeTable([
      { host: "tls.test", backend: makeBackend([a.port]), tls: true, options: { stages: all } },
      { host: "down.test", backend: makeBackend([]), options: { stages: all } },
    ]);
    const p = await start(transport, table, probeKinds(ran, makeBackend([a.port])));
    const moved = await p.request("/x/?q=1", { headers: { host: "tls.test" }, redirect: "manual" });
    expect(moved.status).toBe(308);
    expect(moved.headers.get("location")).toBe("https://tls.test/x/?q=1");
    expect(ran).toEqual(["certificate", "server", "denied", "cors", "redirects", "rewrite"]);
    ran.length = 0;
    const down = await p.request("/", { headers: { host: "down.test" } });
    expect(down.status).toBe(503);
    expect(ran).toEqual(["certificate", "server", "denied", "cors", "redirects", "rewrite", "backend"]);
    expect(a.lines()).toEqual([]);
  });

  test("a policy that cannot run fails closed with 500, before any backend is contacted", async () => {
    const a = await backend("a");
    const kinds = new Map<string, PolicyKind>([
      ["misfiled", testKind("cors", () => () => null)],
      ["bad-params", testKind("access", () => { throw new Error("no ranges"); })],
    ]);
    const table = makeTable([
      { host: "unknown.test", backend: makeBackend([a.port]), options: { stages: [policy("access", "no-such-kind")] } },
      { host: "misfiled.test", backend: makeBackend([a.port]), options: { stages: [policy("access", "misfiled")] } },
      { host: "params.test", backend: makeBackend([a.port]), options: { stages: [policy("access", "bad-params")] } },
    ]);
    const p = await start(transport, table, kinds);
    for (const host of ["unknown.test", "misfiled.test", "params.test"]) {
      const r = await p.request("/", { headers: { host } });
      expect({ host, status: r.status }).toEqual({ host, status: 500 });
    }
    expect(a.lines()).toEqual([]);
  });

  test("routes without policies are served without building any", async () => {
    const a = await backend("a");
    let built = 0;
    const kinds = new Map<string, PolicyKind>([["count", testKind("access", () => (built++, () => null))]]);
    const table = makeTable([
      { host: "plain.test", backend: makeBackend([a.port]) },
      { host: "with.test", backend: makeBackend([a.port]), options: { stages: [policy("access", "count")] } },
    ]);
    const p = await start(transport, table, kinds);
    expect((await p.request("/x", { headers: { host: "plain.test" } })).status).toBe(200);
    expect(built).toBe(0);
    for (let i = 0; i < 3; i++) expect((await p.request("/y", { headers: { host: "with.test" } })).status).toBe(200);
    expect(built).toBe(1); // once per route's stages, not per request
    expect(a.lines()).toEqual(["GET /x HTTP/1.1", "GET /y HTTP/1.1", "GET /y HTTP/1.1", "GET /y HTTP/1.1"]);
  });
});
