// The proxy and explain read a request the same way: both normalise it with src/request/, so
// for the same Ingresses and the same request they name the same route, the same 404, or the
// same 400. The proxy side runs a real listener and raw-socket backends that log the request
// line; explain runs on the same snapshot the proxy's table was compiled from.
import { afterAll, beforeAll, expect, test } from "bun:test";
import net from "node:net";
import { compile } from "../../src/compile/compile.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";
import { explain } from "../../src/compile/explain.ts";
import { RejectedRequest } from "../../src/request/rejected.ts";
import type { Snapshot } from "../../src/store/types.ts";
import { loadFixture } from "../compile/snapshot.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "../e2e/objects.ts";
import { startProxy, statusLine, type TestProxy } from "./helpers.ts";
import { namedBackend, type RawBackend } from "./raw.ts";

let be: RawBackend;
let proxy: TestProxy;
let snapshot: Snapshot;

beforeAll(async () => {
  be = await namedBackend("any");
  const docs = yamlDocs([
    ingressClass(),
    ...["home", "user", "app", "admin", "cafe", "exact"].flatMap((s) => [service("web", s), slice("web", s, [be.port])]),
    ingress("web", "site", [
      {
        host: "a.test",
        paths: [
          { path: "/", service: "home" },
          { path: "/~user", service: "user" },
          { path: "/app", service: "app" },
          { path: "/admin", service: "admin" },
          { path: "/caf%C3%A9", service: "cafe" },
          { path: "/exact", type: "Exact", service: "exact" },
        ],
      },
      { host: "only.test", paths: [{ path: "/app", type: "Exact", service: "app" }] },
    ]),
    // ingress-nginx's regex mode: host-wide, across Ingresses, with rewrites (docs/design.md
    // "Regular expressions").
    ingress("web", "rx", [{ host: "rx.test", paths: [{ path: "/api/(v[0-9]+)/(.*)", type: "ImplementationSpecific", service: "app" }, { path: "/café", type: "ImplementationSpecific", service: "cafe" }] }], {
      annotations: { "nginx.ingress.kubernetes.io/use-regex": "true", "nginx.ingress.kubernetes.io/rewrite-target": "/$2" },
    }),
    ingress("web", "rx-plain", [{ host: "rx.test", paths: [{ path: "/Admin", type: "Exact", service: "admin" }, { path: "/", type: "Prefix", service: "home" }] }]),
    ingress("web", "rx-redirect", [{ host: "go.test", paths: [{ path: "/to/(.*)", type: "ImplementationSpecific", service: "app" }] }], {
      annotations: { "nginx.ingress.kubernetes.io/rewrite-target": "https://example.com/$1" },
    }),
    ingress("web", "rx-empty", [{ host: "empty.test", paths: [{ path: "/e(.*)", type: "ImplementationSpecific", service: "app" }] }], {
      annotations: { "nginx.ingress.kubernetes.io/rewrite-target": "$1" },
    }),
  ]);
  snapshot = loadFixture(docs).snapshot;
  proxy = startProxy(compile(snapshot, DEFAULT_COMPILE_CONFIG).table);
});
afterAll(async () => {
  await proxy.stop();
  await be.stop();
});

function exchange(bytes: string): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const sock = net.connect(proxy.port, "127.0.0.1", () => sock.write(Buffer.from(bytes, "utf8")));
    sock.on("data", (d: Buffer) => chunks.push(d));
    sock.on("close", () => resolve(Buffer.concat(chunks).toString("latin1")));
    sock.on("error", () => {});
  });
}

/** `path`: what the backend receives (the routed path, or the rewritten one). */
type Verdict = { kind: "400" | "404" | "500" } | { kind: "302"; location: string } | { kind: "route"; backend: string; path: string };

async function viaProxy(host: string, target: string): Promise<Verdict> {
  const hits = be.hits.length;
  const records = proxy.records.length;
  const raw = await exchange(`GET ${target} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
  const status = statusLine(raw);
  if (status === 400 || status === 404 || status === 500 || status === 302) {
    expect(be.hits.length, target).toBe(hits);
    if (status !== 302) return { kind: String(status) as "400" | "404" | "500" };
    return { kind: "302", location: /\r\nlocation: ([^\r]*)/i.exec(raw)![1]! };
  }
  expect(status, target).toBe(200);
  expect(be.hits.length, target).toBe(hits + 1);
  const line = be.hits.at(-1)!.line;
  const rec = proxy.records[records]!;
  // The path of the forwarded request line: the routed path unless a rewrite changed it
  // (paths.test.ts checks the routed one on its own).
  return { kind: "route", backend: rec.service!, path: /^GET ([^?\s]*)/.exec(line)![1]! };
}

function viaExplain(host: string, target: string): Verdict {
  try {
    const r = explain(snapshot, DEFAULT_COMPILE_CONFIG, { host, path: target, scheme: "http" });
    if (r.match === null) return { kind: "404" };
    if (r.rewrite?.outcome === "refused") return { kind: "500" };
    // Explain drops the query string; the proxy appends the request's (none here).
    if (r.rewrite?.outcome === "redirect") return { kind: "302", location: r.rewrite.location! };
    return { kind: "route", backend: r.match.backend.id, path: r.rewrite?.path ?? r.request.path };
  } catch (err) {
    if (err instanceof RejectedRequest) return { kind: "400" };
    throw err;
  }
}

const cases: Array<[string, string]> = [
  ["a.test", "/%7Euser/x"],
  ["a.test", "/%7euser"],
  ["a.test", "/x/../app"],
  ["a.test", "/x/%2e%2e/app/1"],
  ["a.test", "//admin/users"],
  ["a.test", "/\\admin"],
  ["a.test", "/.//admin"],
  ["a.test", "/%2e//admin"],
  ["a.test", "/admin;x=1/secret"],
  ["a.test", "/%c0%ae%c0%ae/admin"],
  ["a.test", "/x/%252e%252e/admin"],
  ["a.test", "/caf%c3%a9/menu"],
  ["a.test", "/café"],
  ["a.test", "/%EF%BF%BD"],
  ["a.test", "/a%2Fb"],
  ["a.test", "/a%00"],
  ["a.test", "/exact"],
  ["a.test", "/exact/"],
  ["a.test", "/exact?x=1"],
  ["a.test", "/a{b}"],
  ["A.TEST.", "/app"],
  ["a.test:8080", "/app"],
  ["only.test", "/app"],
  ["only.test", "//app"],
  ["only.test", "/other"],
  ["nobody.test", "/app"],
  ["a.test", "/a#frag"],
  ["rx.test", "/api/v2/users/1"],
  ["rx.test", "/API/V2/x%20y"],
  ["rx.test", "/api/v2/"],
  ["rx.test", "/api/vx/users"],
  ["rx.test", "/caf%C3%A9/menu"],
  ["rx.test", "/café"],
  ["rx.test", "/admin"],
  ["rx.test", "/ADMINISTRATION"],
  ["rx.test", "//api/v1/../v3/z"],
  ["rx.test", "/api/v1/a%3Bb"],
  ["rx.test", "/a%2Fb"],
  ["go.test", "/to/x/y"],
  ["go.test", "/nothing"],
  ["empty.test", "/e"],
  ["empty.test", "/e/x"],
  ["empty.test", "/ex"],
];

for (const [host, target] of cases) {
  test(`${host} ${target}: the proxy and explain agree`, async () => {
    const fromProxy = await viaProxy(host, target);
    expect(viaExplain(host, target)).toEqual(fromProxy);
  });
}

test("/%7Euser/x and /x/../app, where explain once answered 404, are routes in both", async () => {
  const user = await viaProxy("a.test", "/%7Euser/x");
  expect(user).toEqual({ kind: "route", backend: "web/user:80", path: "/~user/x" });
  const app = await viaProxy("a.test", "/x/../app");
  expect(app).toEqual({ kind: "route", backend: "web/app:80", path: "/app" });
  expect(viaExplain("a.test", "/%7Euser/x")).toEqual(user);
  expect(viaExplain("a.test", "/x/../app")).toEqual(app);
});

test("a regex host: both name the location's backend and the rewritten path", async () => {
  const want: Array<[string, string, Verdict]> = [
    ["rx.test", "/API/V2/x%20y", { kind: "route", backend: "web/app:80", path: "/x%20y" }],
    ["rx.test", "/ADMINISTRATION", { kind: "route", backend: "web/admin:80", path: "/ADMINISTRATION" }],
    // The Ingress's rewrite-target /$2 applies to its /café path too: no second group, so "/".
    ["rx.test", "/café", { kind: "route", backend: "web/cafe:80", path: "/" }],
    ["go.test", "/to/x/y", { kind: "302", location: "https://example.com/x/y" }],
    ["empty.test", "/e", { kind: "500" }],
  ];
  for (const [host, target, verdict] of want) {
    expect(await viaProxy(host, target)).toEqual(verdict);
    expect(viaExplain(host, target)).toEqual(verdict);
  }
});
