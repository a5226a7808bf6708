// ingress-nginx's ConfigMap keys proxy-redirect-from/-to, proxy-cookie-domain and
// proxy-cookie-path (config.go Backend, `off` by default): the default of every Ingress whose
// annotation of the same name is absent or invalid, key by key, as proxy/main.go falls back on
// any error of GetStringAnnotation; nginx.tmpl then writes `proxy_redirect FROM TO;`,
// `proxy_cookie_domain ...;`, `proxy_cookie_path ...;` in the location. Asserted against the
// real Portico process (--manifests, --nginx-configmap) with the exact fields the client gets
// from a raw-socket pod, and live: an edit to the ConfigMap applies with no restart. The
// annotation cases themselves are test/e2e/ingress-nginx-proxy-rewrite.test.ts (proxy.go).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rawRequest } from "../proxy/helpers.ts";
import { rawBackend, type RawBackend } from "../proxy/raw.ts";
import { eventually } from "../wait.ts";
import { startPortico, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "./objects.ts";

const NGINX = "nginx.ingress.kubernetes.io/";
type Ann = Record<string, string>;
const ann = (a: Ann): Ann => Object.fromEntries(Object.entries(a).map(([k, v]) => [`${NGINX}${k}`, v]));
const ing = (name: string, host: string, a: Ann) => ingress("web", name, [{ host, paths: [{ path: "/", service: "pod" }] }], { annotations: ann(a) });

const CM = { name: "ingress-nginx-controller", namespace: "ingress-nginx" };
const configMap = (data: Record<string, string>) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { ...CM }, data });
// proxy.go's values ("hello.com" / "goodbye.com", "localhost example.org", "/one/ /") as the
// ConfigMap's.
const DATA = { "proxy-redirect-from": "hello.com", "proxy-redirect-to": "goodbye.com", "proxy-cookie-domain": "localhost example.org", "proxy-cookie-path": "/one/ /" };

let dir = "";
let portico: Portico;
let pod: RawBackend;

/** The request's X-<name> field, as the pod received it, or null. */
const asked = (head: string, name: string): string | null => new RegExp(`^x-${name}:[ \\t]*(.*)$`, "im").exec(head)?.[1] ?? null;

const write = (data: Record<string, string>) => {
  writeFileSync(join(dir, "cm.tmp"), yamlDocs([configMap(data)]));
  renameSync(join(dir, "cm.tmp"), join(dir, "manifests", "ingress-nginx.yaml"));
};

beforeAll(async () => {
  pod = await rawBackend((req) => {
    const lines = [["Location", asked(req.head, "location")], ["Set-Cookie", asked(req.head, "cookie")]]
      .filter(([, v]) => v !== null).map(([n, v]) => `${n}: ${v}\r\n`).join("");
    return `HTTP/1.1 302 Found\r\n${lines}Content-Length: 0\r\nConnection: close\r\n\r\n`;
  });
  dir = mkdtempSync(join(tmpdir(), "portico-e2e-cm-proxy-rewrite-"));
  mkdirSync(join(dir, "manifests"));
  const objects = [
    ingressClass(), service("web", "pod"), slice("web", "pod", [pod.port]),
    ing("plain", "plain.foo.com", {}),
    // Its own values win, `off` included.
    ing("own", "own.foo.com", { "proxy-redirect-from": "off", "proxy-cookie-domain": "localhost own.example" }),
    // An invalid annotation (a `$` variable fails URLIsValidRegex) falls back to the ConfigMap's.
    ing("invalid", "invalid.foo.com", { "proxy-redirect-from": "$host" }),
  ];
  writeFileSync(join(dir, "manifests", "all.yaml"), yamlDocs(objects));
  write(DATA);
  portico = await startPortico(["--manifests", join(dir, "manifests"), "--nginx-configmap", `${CM.namespace}/${CM.name}`]);
});

afterAll(async () => {
  await portico?.stop();
  await pod?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The Location and Set-Cookie fields the client gets from `host` when the pod sends these. */
async function answer(host: string, location: string, cookie: string): Promise<{ status: number; location: string[]; cookie: string[] }> {
  const raw = await rawRequest(portico.ports.http, `GET /app HTTP/1.1\r\nHost: ${host}\r\nX-Location: ${location}\r\nX-Cookie: ${cookie}\r\nConnection: close\r\n\r\n`, 20_000);
  const head = raw.slice(0, raw.indexOf("\r\n\r\n")).split("\r\n");
  const values = (name: string) => head.slice(1).filter((l) => l.toLowerCase().startsWith(`${name}:`)).map((l) => l.slice(name.length + 1).trim());
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1] ?? 0), location: values("location"), cookie: values("set-cookie") };
}

const COOKIE = "a=1; Domain=localhost; Path=/one/two; HttpOnly";

describe("ConfigMap proxy-redirect-from/-to, proxy-cookie-domain/-path", () => {
  test("an Ingress without the annotations gets the ConfigMap's values", async () => {
    expect(await answer("plain.foo.com", "hello.com/path?q=1", COOKIE)).toEqual({
      status: 302, location: ["goodbye.com/path?q=1"], cookie: ["a=1; Domain=example.org; Path=/two; HttpOnly"],
    });
  });

  test("an Ingress's own annotation wins, key by key (`off` too)", async () => {
    expect(await answer("own.foo.com", "hello.com/path", COOKIE)).toEqual({
      status: 302, location: ["hello.com/path"], cookie: ["a=1; Domain=own.example; Path=/two; HttpOnly"],
    });
  });

  test("an invalid annotation falls back to the ConfigMap's value", async () => {
    expect((await answer("invalid.foo.com", "hello.com/x", "b=2")).location).toEqual(["goodbye.com/x"]);
  });

  test("an edit applies with no restart; a value nginx would not load keeps the last good one", async () => {
    write({ ...DATA, "proxy-redirect-to": "farewell.com", "proxy-cookie-path": "/one/ /a/" });
    await eventually(async () => (await answer("plain.foo.com", "hello.com/y", "c=3; Path=/one/z")).location[0] === "farewell.com/y", 15_000, "the new proxy-redirect-to");
    expect((await answer("plain.foo.com", "hello.com/y", "c=3; Path=/one/z")).cookie).toEqual(["c=3; Path=/a/z"]);
    // Three words: nginx's proxy_cookie_domain would not load; the previous value stays.
    write({ ...DATA, "proxy-redirect-to": "farewell.com", "proxy-cookie-path": "/one/ /a/", "proxy-cookie-domain": "a b c" });
    await portico.waitForLine(/InvalidConfigKey.*proxy-cookie-domain=\\"a b c\\"|proxy-cookie-domain=\\"a b c\\".*InvalidConfigKey/);
    expect((await answer("plain.foo.com", "hello.com/y", COOKIE)).cookie).toEqual(["a=1; Domain=example.org; Path=/a/two; HttpOnly"]);
    // Removed: back to `off`.
    write({});
    await eventually(async () => (await answer("plain.foo.com", "hello.com/y", COOKIE)).location[0] === "hello.com/y", 15_000, "proxy-redirect back to off");
    expect((await answer("plain.foo.com", "hello.com/y", COOKIE)).cookie).toEqual([COOKIE]);
  });
});
