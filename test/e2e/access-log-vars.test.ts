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
import { configMapManifests, get, startPortico, type ConfigMapManifests, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, yamlDocs } from "./objects.ts";

const N = "nginx.ingress.kubernetes.io/";
const FORMAT = "V|$req_id|$upstream_addr|$upstream_status|$upstream_response_length|$upstream_connect_time|$upstream_header_time|$upstream_response_time|$body_bytes_sent|$status|$remote_port|$proxy_protocol_addr|$the_real_ip|$https|$location_path|$ssl_protocol|$bytes_sent|$server_addr";

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
      // The pod answers 502, which the Ingress's error pages send to its default-backend.
      service("shop", "sick"),
      sliceOf("shop", "sick", pod.port, ["127.0.0.2"]),
      ingress("shop", "paged", [{ host: "paged.test", paths: [{ path: "/", service: "sick" }] }], {
        annotations: { [`${N}custom-http-errors`]: "502", [`${N}default-backend`]: "web" },
      }),
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

  // error_page to a named location is an internal redirect: nginx pushes a state without a peer
  // and writes " : " between the two upstream groups (ngx_http_upstream_init_request; the
  // *_variable loops in ngx_http_upstream.c).
  test("an error page's request to another Service: ` : ` between the groups", async () => {
    const res = await get(portico.http, "paged.test", "/p", { headers: { "x-request-id": "paged-1", "accept-encoding": "identity" } });
    expect(res.status).toBe(200);
    const [addr, status, length, , header, response, , final] = await fieldsOf(portico, "paged-1");
    expect([addr, status, length, final]).toEqual([`127.0.0.2:${pod.port} : 127.0.0.1:${pod.port}`, "502 : 200", `0 : ${BODY.length}`, "200"]);
    expect(header!.split(" : ").every((t) => TIME.test(t))).toBe(true);
    expect(response!.split(" : ").every((t) => TIME.test(t))).toBe(true);
  });

  test("an answer Portico made itself (no route: 404): every $upstream_* is `-`", async () => {
    const res = await get(portico.http, "nowhere.test", "/", { headers: { "x-request-id": "own-1" } });
    expect(res.status).toBe(404);
    expect((await fieldsOf(portico, "own-1")).slice(0, 8)).toEqual(["-", "-", "-", "-", "-", "-", String(Buffer.byteLength(res.body)), "404"]);
  });
});

/** One HTTP/1.1 request on a raw connection to `port` (after `prefix`, e.g. a PROXY header); the client's local port. */
function rawGet(port: number, prefix: string, host: string, target: string, id: string): Promise<{ localPort: number; answer: string }> {
  return new Promise((resolve, reject) => {
    let answer = "";
    const s = net.connect(port, "127.0.0.1", () => {
      s.write(`${prefix}GET ${target} HTTP/1.1\r\nHost: ${host}\r\nX-Request-ID: ${id}\r\nAccept-Encoding: identity\r\nConnection: close\r\n\r\n`);
    });
    s.on("data", (d: Buffer) => (answer += d.toString("latin1")));
    s.on("close", () => resolve({ localPort: localPort ?? 0, answer }));
    s.on("error", reject);
    let localPort: number | undefined;
    s.on("connect", () => (localPort = s.localPort));
  });
}

// ngx_http_variables.c: $remote_port is the client connection's port; $https "on" or empty;
// $proxy_protocol_addr not found without a PROXY header. nginx.tmpl: `map '' $the_real_ip` is
// $remote_addr without use-proxy-protocol; `set $location_path` is the Ingress path of the
// location. $ssl_protocol is not found on a plain connection.
describe("connection variables without a PROXY header", () => {
  test("$remote_port is the client's port; $https empty; $location_path the Ingress path", async () => {
    const { localPort, answer } = await rawGet(portico.ports.http, "", "gz.test", "/deep/x", "conn-1");
    expect(answer.startsWith("HTTP/1.1 200")).toBe(true);
    const f = await fieldsOf(portico, "conn-1");
    expect(f.slice(8, 14)).toEqual([String(localPort), "-", "127.0.0.1", "", "/", "-"]);
    // The harness binds 127.0.0.1 (--bind): the address the request came to.
    expect(f[15]).toBe("127.0.0.1");
  });

  // ngx_http_log_module's $bytes_sent: every byte sent to the client, status line and fields
  // included (r->connection->sent), beside $body_bytes_sent. Here the bytes the client read.
  test("$bytes_sent is every byte the client got, head included: a relayed answer and Portico's own 404", async () => {
    const relayed = await rawGet(portico.ports.http, "", "gz.test", "/b", "sent-1");
    expect(relayed.answer.startsWith("HTTP/1.1 200")).toBe(true);
    const own = await rawGet(portico.ports.http, "", "nowhere.test", "/b", "sent-2");
    expect(own.answer.startsWith("HTTP/1.1 404")).toBe(true);
    const [r, o] = [await fieldsOf(portico, "sent-1"), await fieldsOf(portico, "sent-2")];
    expect([r[6], r[14]]).toEqual([String(BODY.length), String(relayed.answer.length)]);
    expect(o[14]).toBe(String(own.answer.length));
  });
});

// ingress-nginx's use-proxy-protocol (nginx.tmpl `listen ... proxy_protocol`, real_ip_header
// proxy_protocol, set_real_ip_from proxy-real-ip-cidr: 0.0.0.0/0 by default): $remote_addr and
// $remote_port become the header's source (ngx_http_realip_module), $proxy_protocol_addr and
// $proxy_protocol_port are the header's source (ngx_http_variable_proxy_protocol_addr/_port),
// and $the_real_ip is $proxy_protocol_addr (nginx.tmpl's map under UseProxyProtocol).
describe("use-proxy-protocol: the PROXY header's source in the line", () => {
  let m: ConfigMapManifests;
  let pp: Portico;
  const PP_FORMAT = "W|$req_id|$remote_addr|$remote_port|$proxy_protocol_addr|$proxy_protocol_port|$the_real_ip|$location_path|$upstream_addr|$upstream_status";
  beforeAll(async () => {
    m = configMapManifests("portico-log-vars-pp-");
    m.writeObjects(yamlDocs([
      ingressClass(), service("shop", "web"), sliceOf("shop", "web", pod.port, ["127.0.0.1"]),
      ingress("shop", "app", [{ host: "pp.test", paths: [{ path: "/app", service: "web" }] }]),
    ]));
    m.writeConfigMap({ "use-proxy-protocol": "true", "log-format-upstream": PP_FORMAT });
    pp = await startPortico([...m.args]);
  });
  afterAll(async () => {
    await pp?.stop("SIGKILL");
    m?.remove();
  });

  test("one request behind a PROXY v1 header", async () => {
    const { answer } = await rawGet(pp.ports.http, `PROXY TCP4 203.0.113.7 10.0.0.1 40123 80\r\n`, "pp.test", "/app/x", "pp-1");
    expect(answer.startsWith("HTTP/1.1 200")).toBe(true);
    const line = await pp.waitForLine(/^W\|pp-1\|/);
    expect(line).toBe(`W|pp-1|203.0.113.7|40123|203.0.113.7|40123|203.0.113.7|/app|127.0.0.1:${pod.port}|200`);
  });
});

// `--access-log-template=ingress-nginx`: ingress-nginx's default log-format-upstream
// (internal/ingress/controller/config/config.go logFormatUpstream), the line a pipeline written
// for ingress-nginx parses, here for a request retried once (proxy-next-upstream http_502).
describe("--access-log-template=ingress-nginx", () => {
  let d: string;
  let named: Portico;
  beforeAll(async () => {
    d = mkdtempSync(join(tmpdir(), "portico-log-vars-named-"));
    writeFileSync(join(d, "all.yaml"), yamlDocs([
      ingressClass(), service("shop", "flaky"), sliceOf("shop", "flaky", pod.port, ["127.0.0.1", "127.0.0.2"]),
      ingress("shop", "flaky", [{ host: "flaky.test", paths: [{ path: "/", service: "flaky" }] }], {
        annotations: { [`${N}proxy-next-upstream`]: "error timeout http_502" },
      }),
    ]));
    named = await startPortico(["--manifests", d, "--access-log-template=ingress-nginx"]);
  });
  afterAll(async () => {
    await named?.stop("SIGKILL");
    if (d) rmSync(d, { recursive: true, force: true });
  });

  test("the line is ingress-nginx's default format, every attempt in its upstream fields", async () => {
    const p = pod.port;
    for (let i = 0; i < 6; i++) {
      const id = `named-${i}`;
      const res = await get(named.http, "flaky.test", "/n?x=1", { headers: { "x-request-id": id, "user-agent": "curl/8.5.0", "accept-encoding": "identity" } });
      expect(res.status).toBe(200);
      const line = await named.waitForLine(new RegExp(` ${id}$`));
      const m = /^127\.0\.0\.1 - - \[\d\d\/[A-Z][a-z]{2}\/\d{4}:\d\d:\d\d:\d\d \+0000\] "GET \/n\?x=1 HTTP\/1\.1" 200 (\d+) "-" "curl\/8\.5\.0" \d+ \d+\.\d{3} \[shop-flaky-80\] \[\] ([\d.:]+(?:, [\d.:]+)?) (\d+(?:, \d+)?) (\d+\.\d{3}(?:, \d+\.\d{3})?) (\d{3}(?:, \d{3})?) (\S+)$/.exec(line);
      expect(m, line).not.toBeNull();
      expect(m![1]).toBe(String(BODY.length));
      expect(m![6]).toBe(id);
      if (!m![2]!.includes(", ")) continue;
      expect([m![2], m![3], m![5]]).toEqual([`127.0.0.2:${p}, 127.0.0.1:${p}`, `0, ${BODY.length}`, "502, 200"]);
      return;
    }
    throw new Error("no request was retried");
  });
});
