// --access-log-template's variables as nginx writes them, read as whole lines from a real
// Portico process. nginx keeps one ngx_http_upstream_state_t per upstream tried and writes each
// $upstream_* variable as one value per attempt joined by ", " (ngx_http_upstream.c:
// ngx_http_upstream_addr_variable, _status_variable, _response_time_variable,
// _response_length_variable); a failed attempt's status is the 502 (or 504) that
// ngx_http_upstream_next records, its connect and header times `-` when none came; with no
// upstream at all (an answer nginx made itself) each is not found, `-`. $upstream_response_length
// is the pod's body as read (u->state->response_length), not $body_bytes_sent.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import net from "node:net";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rawBackend, type RawBackend } from "../proxy/raw.ts";
import { get, startPortico, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, yamlDocs } from "./objects.ts";

const N = "nginx.ingress.kubernetes.io/";
const FORMAT = "V|$request_id|$upstream_addr|$upstream_status|$upstream_response_length|$upstream_connect_time|$upstream_header_time|$upstream_response_time|$body_bytes_sent|$status";

/** An EndpointSlice naming several loopback addresses on one port. */
const sliceOf = (ns: string, svc: string, port: number, addresses: string[]) => ({
  apiVersion: "discovery.k8s.io/v1",
  kind: "EndpointSlice",
  metadata: { name: `${svc}-x`, namespace: ns, labels: { "kubernetes.io/service-name": svc } },
  addressType: "IPv4",
  ports: [{ name: "http", port }],
  endpoints: addresses.map((a) => ({ addresses: [a], conditions: { ready: true } })),
});

/** The template's fields of the line for request `id` (the line starts `V|id|`). */
async function fieldsOf(p: Portico, id: string): Promise<string[]> {
  const line = await p.waitForLine(new RegExp(`^V\\|${id}\\|`));
  return line.split("|").slice(2);
}

const BODY = "a".repeat(2000);
let pod: RawBackend;
let failing: net.Server;
const failingSockets = new Set<net.Socket>();
let dir: string;
let portico: Portico;

beforeAll(async () => {
  // The pod that answers, on 127.0.0.1:P; 127.0.0.2:P answers 502 to every request (a second
  // listener on the same port of another loopback address), and 127.0.0.3:P refuses.
  pod = await rawBackend(() => `HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ${BODY.length}\r\n\r\n${BODY}`);
  failing = net.createServer((s) => {
    failingSockets.add(s);
    s.on("close", () => failingSockets.delete(s));
    s.on("error", () => {});
    s.on("data", () => s.write("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 4\r\n\r\nbad!"));
  });
  await new Promise<void>((resolve, reject) => {
    failing.once("error", reject);
    failing.listen(pod.port, "127.0.0.2", () => resolve());
  });
  dir = mkdtempSync(join(tmpdir(), "portico-log-vars-"));
  writeFileSync(
    join(dir, "all.yaml"),
    yamlDocs([
      ingressClass(),
      service("shop", "flaky"),
      sliceOf("shop", "flaky", pod.port, ["127.0.0.1", "127.0.0.2"]),
      service("shop", "gone"),
      sliceOf("shop", "gone", pod.port, ["127.0.0.1", "127.0.0.3"]),
      service("shop", "web"),
      sliceOf("shop", "web", pod.port, ["127.0.0.1"]),
      ingress("shop", "flaky", [{ host: "flaky.test", paths: [{ path: "/", service: "flaky" }] }], {
        annotations: { [`${N}proxy-next-upstream`]: "error timeout http_502" },
      }),
      ingress("shop", "gone", [{ host: "gone.test", paths: [{ path: "/", service: "gone" }] }]),
      ingress("shop", "web", [{ host: "gz.test", paths: [{ path: "/", service: "web" }] }]),
    ]),
  );
  portico = await startPortico(["--manifests", dir, "--access-log-template", FORMAT, "--gzip"]);
});
afterAll(async () => {
  await portico?.stop("SIGKILL");
  for (const s of failingSockets) s.destroy();
  await new Promise<void>((resolve) => (failing ? failing.close(() => resolve()) : resolve()));
  await pod?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const TIME = /^\d+\.\d{3}$/;

/**
 * Requests to `host` until one was retried (the balancer's round robin starts each request at
 * the next endpoint, so one of the first few starts at the failing one); its fields.
 */
async function retriedLine(host: string, tag: string): Promise<string[]> {
  for (let i = 0; i < 6; i++) {
    const id = `${tag}-${i}`;
    const res = await get(portico.http, host, "/", { headers: { "x-request-id": id, "accept-encoding": "identity" } });
    expect(res.status).toBe(200);
    const f = await fieldsOf(portico, id);
    if (f[0]!.includes(", ")) return f;
  }
  throw new Error(`no request to ${host} was retried`);
}

describe("$upstream_* over every attempt", () => {
  test("an answer dropped for the next endpoint (proxy-next-upstream http_502): both attempts, `, `-joined", async () => {
    const [addr, status, length, connect, header, response, sent, final] = await retriedLine("flaky.test", "flaky");
    expect(addr).toBe(`127.0.0.2:${pod.port}, 127.0.0.1:${pod.port}`);
    expect(status).toBe("502, 200");
    // The dropped 502's body was never read (nginx reads none before ngx_http_upstream_next).
    expect(length).toBe(`0, ${BODY.length}`);
    const [h1, h2] = header!.split(", ");
    expect([TIME.test(h1!), TIME.test(h2!)]).toEqual([true, true]);
    const [r1, r2] = response!.split(", ");
    expect([TIME.test(r1!), TIME.test(r2!)]).toEqual([true, true]);
    // A connect time is known only for a connection Portico probed itself; else `-`.
    expect(connect!.split(", ").every((c) => c === "-" || TIME.test(c))).toBe(true);
    expect([sent, final]).toEqual([String(BODY.length), "200"]);
  });

  test("a refused connection: its address, 502, and `-` for the times that never came", async () => {
    const [addr, status, length, connect, header, response] = await retriedLine("gone.test", "gone");
    expect(addr).toBe(`127.0.0.3:${pod.port}, 127.0.0.1:${pod.port}`);
    expect(status).toBe("502, 200");
    expect(length).toBe(`0, ${BODY.length}`);
    expect(connect!.split(", ")[0]).toBe("-");
    expect(header!.split(", ")[0]).toBe("-");
    expect(response!.split(", ").every((t) => TIME.test(t))).toBe(true);
  });

  test("gzip: $upstream_response_length is the pod's body, $body_bytes_sent what the client got", async () => {
    const res = await fetch(`${portico.http}/`, { headers: { host: "gz.test", "accept-encoding": "gzip", "x-request-id": "gz-1" }, decompress: false } as RequestInit);
    expect(res.headers.get("content-encoding")).toBe("gzip");
    const got = (await res.arrayBuffer()).byteLength;
    const [addr, status, length, , , , sent] = await fieldsOf(portico, "gz-1");
    expect([addr, status, length, sent]).toEqual([`127.0.0.1:${pod.port}`, "200", String(BODY.length), String(got)]);
    expect(got).toBeLessThan(BODY.length);
  });

  test("an answer Portico made itself (no route: 404): every $upstream_* is `-`", async () => {
    const res = await get(portico.http, "nowhere.test", "/", { headers: { "x-request-id": "own-1" } });
    expect(res.status).toBe(404);
    expect(await fieldsOf(portico, "own-1")).toEqual(["-", "-", "-", "-", "-", "-", String(Buffer.byteLength(res.body)), "404"]);
  });
});
