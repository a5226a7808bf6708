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
import { rawBackend, type RawBackend } from "./raw-backend.ts";

let be: RawBackend;
let proxy: TestProxy;
let snapshot: Snapshot;

beforeAll(async () => {
  be = await rawBackend("any");
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

type Verdict = { kind: "400" } | { kind: "404" } | { kind: "route"; backend: string; path: string };

async function viaProxy(host: string, target: string): Promise<Verdict> {
  const hits = be.hits.length;
  const records = proxy.records.length;
  const raw = await exchange(`GET ${target} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
  const status = statusLine(raw);
  if (status === 400 || status === 404) {
    expect(be.hits.length, target).toBe(hits);
    return { kind: status === 400 ? "400" : "404" };
  }
  expect(status, target).toBe(200);
  expect(be.hits.length, target).toBe(hits + 1);
  const line = be.hits.at(-1)!.line;
  const rec = proxy.records[records]!;
  // The forwarded line carries the routed path (paths.test.ts checks this on its own).
  expect(/^GET ([^?\s]*)/.exec(line)?.[1], target).toBe(rec.path);
  return { kind: "route", backend: rec.service!, path: rec.path };
}

function viaExplain(host: string, target: string): Verdict {
  try {
    const r = explain(snapshot, DEFAULT_COMPILE_CONFIG, { host, path: target, scheme: "http" });
    if (r.match === null) return { kind: "404" };
    return { kind: "route", backend: r.match.backend.id, path: r.request.path };
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
