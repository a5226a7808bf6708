// The fake API server's list pagination (limit/continue) over real sockets: pages in key
// order with no gap or duplicate, filters applied before the limit, continue points that
// survive deletions, serialised items that follow updates, and 410 for a compacted continue.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startFakeApiServer, type FakeApiServer } from "../fake-apiserver.ts";
import { OBJECTS } from "../fake-apiserver/fixtures.ts";

let api: FakeApiServer;
beforeAll(async () => {
  api = await startFakeApiServer({ token: "t" });
});
afterAll(() => api.stop());

interface Page {
  status: number;
  kind?: string;
  metadata: { resourceVersion: string; continue?: string };
  items: { kind?: string; apiVersion?: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> }; spec?: { ports?: { port: number }[] } }[];
  code?: number;
}

async function get(path: string, q: Record<string, string>): Promise<Page> {
  const r = await fetch(`${api.url}${path}?${new URLSearchParams(q)}`, { headers: { authorization: "Bearer t" } });
  return { ...((await r.json()) as Page), status: r.status };
}

/** Every page of a list; `between` runs after each page that has a continue token. */
async function pages(path: string, q: Record<string, string>, between: (page: number) => void = () => {}): Promise<Page[]> {
  const out: Page[] = [];
  let cont = "";
  do {
    const p = await get(path, { ...q, ...(cont ? { continue: cont } : {}) });
    expect(p.status).toBe(200);
    out.push(p);
    cont = p.metadata.continue ?? "";
    if (cont) between(out.length);
  } while (cont && out.length < 100);
  return out;
}

const names = (ps: Page[]) => ps.flatMap((p) => p.items.map((o) => `${o.metadata.namespace}/${o.metadata.name}`));

test("pages follow key order with no gap or duplicate; items carry no kind/apiVersion; one version for the list", async () => {
  const want: string[] = [];
  for (const ns of ["pg-b", "pg-a", "pg-c"]) {
    for (let i = 0; i < 8; i++) {
      api.create("Service", OBJECTS.Service(ns, `s${i}`));
      want.push(`${ns}/s${i}`);
    }
  }
  want.sort();
  const ps = await pages("/api/v1/services", { limit: "5", labelSelector: "!nothing" });
  const got = names(ps).filter((n) => n.startsWith("pg-"));
  expect(got).toEqual(want);
  expect(ps.length).toBe(Math.ceil(names(ps).length / 5));
  expect(ps.slice(0, -1).every((p) => p.items.length === 5 && typeof p.metadata.continue === "string")).toBe(true);
  expect(ps.at(-1)!.metadata.continue).toBeUndefined();
  expect(new Set(ps.map((p) => p.metadata.resourceVersion)).size).toBe(1);
  expect(ps[0]!.kind).toBe("ServiceList");
  expect(ps.flatMap((p) => p.items).some((o) => "kind" in o || "apiVersion" in o)).toBe(false);
});

test("namespace and selectors filter before the limit; exactly `limit` matches give no continue", async () => {
  for (let i = 0; i < 9; i++) {
    api.create("Service", { metadata: { name: `l${i}`, namespace: "sel", labels: { tier: i % 3 === 0 ? "front" : "back" } }, spec: { ports: [{ port: 80 }] } });
  }
  const front = await pages("/api/v1/namespaces/sel/services", { limit: "2", labelSelector: "tier=front" });
  expect(names(front)).toEqual(["sel/l0", "sel/l3", "sel/l6"]);
  expect(front.map((p) => p.items.length)).toEqual([2, 1]);
  const exact = await pages("/api/v1/namespaces/sel/services", { limit: "3", labelSelector: "tier=front" });
  expect(exact.length).toBe(1);
  expect(exact[0]!.metadata.continue).toBeUndefined();
  const byName = await get("/api/v1/services", { fieldSelector: "metadata.name=l4", limit: "1" });
  expect(byName.items.map((o) => o.metadata.name)).toEqual(["l4"]);
  expect(byName.metadata.continue).toBeUndefined();
});

test("a continue point survives the deletion of the object it names; later pages show current state", async () => {
  for (let i = 0; i < 10; i++) api.create("Ingress", OBJECTS.Ingress("del", `i${i}`));
  const ps = await pages("/apis/networking.k8s.io/v1/namespaces/del/ingresses", { limit: "3" }, (page) => {
    if (page === 1) {
      api.delete("Ingress", "del", "i2"); // the last object served: the continue point itself
      api.delete("Ingress", "del", "i4"); // not served yet: not listed
      api.create("Ingress", OBJECTS.Ingress("del", "i0a")); // before the continue point: not listed
    }
  });
  expect(names(ps)).toEqual(["del/i0", "del/i1", "del/i2", "del/i3", "del/i5", "del/i6", "del/i7", "del/i8", "del/i9"]);
});

test("an update is listed with its new content (no stale serialisation)", async () => {
  const s = api.create("Service", { metadata: { name: "upd", namespace: "upd" }, spec: { ports: [{ port: 80 }] } });
  const first = await get("/api/v1/namespaces/upd/services", {});
  expect(first.items[0]!.spec!.ports![0]!.port).toBe(80);
  api.update("Service", { ...s, spec: { ports: [{ port: 8080 }] } });
  const second = await get("/api/v1/namespaces/upd/services", {});
  expect(second.items[0]!.spec!.ports![0]!.port).toBe(8080);
  expect(Number(second.metadata.resourceVersion)).toBeGreaterThan(Number(first.metadata.resourceVersion));
});

test("a continue token older than the compacted history answers 410 Expired", async () => {
  for (let i = 0; i < 4; i++) api.create("Service", OBJECTS.Service("exp", `e${i}`));
  const p1 = await get("/api/v1/namespaces/exp/services", { limit: "2" });
  expect(p1.metadata.continue).toBeDefined();
  api.create("Service", OBJECTS.Service("exp", "bump"));
  api.compact();
  const p2 = await get("/api/v1/namespaces/exp/services", { limit: "2", continue: p1.metadata.continue! });
  expect(p2.status).toBe(410);
  expect(p2.code).toBe(410);
});
