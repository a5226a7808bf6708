// ingress-nginx's ConfigMap proxy-buffering through the real process (--manifests, two workers):
// defaults.Backend ProxyBuffering is every location's proxy_buffering without the annotation
// (nginx.tmpl), and a ConfigMap edit reloads nginx. Here the key is edited while serving and the
// next answers are held as nginx's event pipe holds them (ngx_event_pipe.c
// ngx_event_pipe_read_upstream: a 4k buffer less the pod's 42-byte head, 4054 body bytes, goes
// out once full; docs/design.md "Response buffering").
import { afterAll, beforeAll, expect, test } from "bun:test";
import type net from "node:net";
import { chunkedData, rawBackend, rawClient, type RawBackend } from "../proxy/raw.ts";
import { eventually } from "../wait.ts";
import { configMapManifests, startPortico, type ConfigMapManifests, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "./objects.ts";

const HEAD = "HTTP/1.1 200 OK\r\nContent-Length: 99999\r\n\r\n";
const FIRST = "hello" + "x".repeat(5000);
const REST = "y".repeat(99999 - FIRST.length);

let backend: RawBackend;
const waiting: ((s: net.Socket) => void)[] = [];
let m: ConfigMapManifests;
let portico: Portico;
beforeAll(async () => {
  backend = await rawBackend((req) => {
    waiting.shift()?.(req.socket);
    return null;
  });
  m = configMapManifests("portico-proxy-buffering-");
  m.writeObjects(yamlDocs([ingressClass(), service("shop", "web"), slice("shop", "web", [backend.port]), ingress("shop", "web", [{ host: "shop.test", paths: [{ path: "/", service: "web" }] }])]));
  m.writeConfigMap({ "proxy-buffering": "off" });
  portico = await startPortico([...m.args, "--workers", "2", "--access-log", "off"]);
});
afterAll(async () => {
  await portico?.stop("SIGKILL");
  await backend?.stop();
  m?.remove();
});

/**
 * One GET on a new connection: the pod sends its head and 5005 body bytes; what the client holds
 * once it holds any body, then the rest is sent and the whole body checked.
 */
async function firstPiece(): Promise<string> {
  const pod = new Promise<net.Socket>((resolve) => waiting.push(resolve));
  const c = await rawClient(Number(new URL(portico.http).port));
  try {
    c.write("GET / HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n");
    const s = await pod;
    s.write(HEAD);
    s.write(FIRST);
    const body = () => {
      const raw = c.data();
      const end = raw.indexOf("\r\n\r\n");
      return end < 0 ? "" : chunkedData(raw.slice(end + 4));
    };
    await eventually(() => body().length > 0, 10_000, "the first body bytes");
    const first = body();
    s.end(REST);
    await eventually(() => body().length === 99999, 10_000, "the whole body");
    expect(body()).toBe(FIRST + REST);
    return first;
  } finally {
    c.destroy();
  }
}

test("proxy-buffering edited to on while serving holds the next answers on every worker, with no restart", async () => {
  const pid = portico.proc.pid;
  // Off: each read of the pod goes on as it comes (5005 bytes, in one piece or two).
  expect(FIRST.startsWith(await firstPiece())).toBe(true);
  m.writeConfigMap({ "proxy-buffering": "on" });
  await eventually(async () => (await firstPiece()).length === 4054, 20_000, "a held answer");
  // Each request is a new connection, which the kernel spreads over the workers: all held.
  for (let i = 0; i < 3; i++) expect(await firstPiece()).toBe(FIRST.slice(0, 4054));
  expect(portico.proc.pid).toBe(pid);
  expect(portico.lines.some((l) => l.includes("proxy-buffering") && l.includes("next restart"))).toBe(false);
});
