// limit-rate side by side with nginx: the same pod answers (40 KiB, at once, with or without
// X-Accel-Buffering / X-Accel-Limit-Rate) through a real nginx whose locations carry what
// nginx.tmpl writes for ingress-nginx's proxy-buffering and limit-rate (`proxy_buffering on|off;`,
// `limit_rate <n>k;`, no proxy_ignore_headers), and through Portico with the same annotations.
// Each answer is classed paced or not, and both sides must agree on every case.
// nginx's source for the classes (ngx_http_upstream.c): ngx_http_upstream_send_response sets
// `r->limit_rate = 0` for an unbuffered answer; ngx_http_upstream_process_buffering reads
// X-Accel-Buffering `yes`/`no`; ngx_http_upstream_process_limit_rate sets r->limit_rate from
// X-Accel-Limit-Rate with ngx_atoi (bytes per second; `off` is refused and changes nothing).
// Classed by a bound load can only make safer: paced means no arrival beyond
// 16 KiB × (t + 2) (nginx's write filter allows a second's worth per started whole second, so up
// to two seconds' worth right after a second boundary), and an unpaced 40 KiB is past that bound
// by its last byte unless loopback takes over a second for it. Skipped where nginx is not installed.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { RouteOptions } from "../../src/table/types.ts";
import { answersAt, makeBackend, makeTable, NGINX_BIN, optionsOf, startNginx, startProxy, type RealNginx } from "./helpers.ts";
import { readPaced } from "./paced.ts";
import { rawBackend, type RawBackend } from "./raw.ts";

const N = "nginx.ingress.kubernetes.io/";
const KIB = 1024;
const SIZE = 40 * KIB;
const RATE = 16 * KIB;
const BODY = "0123456789abcdef".repeat(SIZE / 16);

/** The pod's extra header lines, chosen by the path's last segment. */
const POD_FIELDS: Readonly<Record<string, string>> = {
  plain: "",
  xab: "X-Accel-Buffering: yes\r\n",
  xlr: `X-Accel-Limit-Rate: ${RATE}\r\n`,
  xlr0: "X-Accel-Limit-Rate: 0\r\n",
  xlroff: "X-Accel-Limit-Rate: off\r\n",
};

interface Case {
  readonly name: string;
  readonly buffering: "on" | "off";
  /** limit-rate in KiB, or null for none. */
  readonly limit: number | null;
  readonly pod: keyof typeof POD_FIELDS;
  readonly paced: boolean;
}

const CASES: readonly Case[] = [
  { name: "buffering off, limit-rate 16", buffering: "off", limit: 16, pod: "plain", paced: false },
  { name: "buffering on, limit-rate 16", buffering: "on", limit: 16, pod: "plain", paced: true },
  { name: "buffering off, limit-rate 16, the pod's X-Accel-Buffering: yes", buffering: "off", limit: 16, pod: "xab", paced: true },
  { name: "buffering on, no limit-rate, the pod's X-Accel-Limit-Rate: 16384", buffering: "on", limit: null, pod: "xlr", paced: true },
  { name: "buffering off, no limit-rate, the pod's X-Accel-Limit-Rate: 16384", buffering: "off", limit: null, pod: "xlr", paced: false },
  { name: "buffering on, limit-rate 16, the pod's X-Accel-Limit-Rate: 0", buffering: "on", limit: 16, pod: "xlr0", paced: false },
  { name: "buffering on, limit-rate 16, the pod's X-Accel-Limit-Rate: off", buffering: "on", limit: 16, pod: "xlroff", paced: true },
];

/** GET `url`; whether every piece arrived within 16 KiB × (t + 2), t from just before the request. The whole body must arrive. */
async function paced(url: string, host: string): Promise<boolean> {
  const r = await readPaced(url, host, RATE, 2);
  expect(r.status).toBe(200);
  expect(r.body.toString("latin1")).toBe(BODY);
  return r.within;
}

let backend: RawBackend;
let nginx: RealNginx | null = null;
beforeAll(async () => {
  backend = await rawBackend((req) => {
    const key = req.line.split(" ")[1]!.split("/").pop()!;
    return `HTTP/1.1 200 OK\r\n${POD_FIELDS[key] ?? ""}Content-Length: ${SIZE}\r\n\r\n${BODY}`;
  });
  if (NGINX_BIN === null) return;
  const locations = CASES.map(
    (c, i) => `location /c${i}/ { proxy_http_version 1.1; proxy_buffering ${c.buffering}; proxy_buffer_size 4k; proxy_buffers 4 4k; ${c.limit === null ? "" : `limit_rate ${c.limit}k; `}proxy_pass http://127.0.0.1:${backend.port}; }`,
  ).join("\n");
  nginx = await startNginx({
    prefix: "portico-limit-rate-nginx-",
    http: (port) => `access_log off; server { listen 127.0.0.1:${port}; location = /ready { return 204; } ${locations} }`,
    ready: answersAt("/ready"),
  });
});
afterAll(async () => {
  await nginx?.stop();
  await backend?.stop();
});

const optionsFor = (c: Case): RouteOptions =>
  optionsOf({ [`${N}proxy-buffering`]: c.buffering, ...(c.limit === null ? {} : { [`${N}limit-rate`]: String(c.limit) }) });

describe("limit-rate, paced or not, as nginx", () => {
  test.skipIf(NGINX_BIN === null)("nginx 1.22.1 and Portico agree on each case", async () => {
    const proxy = startProxy(makeTable(CASES.map((c, i) => ({ host: `c${i}.test`, backend: makeBackend([backend.port]), options: optionsFor(c) }))));
    try {
      // All at once: each answer's bound is its own, and 14 requests on loopback are few.
      const got = await Promise.all(
        CASES.map(async (c, i) => {
          const path = `/c${i}/${c.pod}`;
          const [n, p] = await Promise.all([paced(`http://127.0.0.1:${nginx!.port}${path}`, "a.test"), paced(`${proxy.url}${path}`, `c${i}.test`)]);
          return { case: c.name, nginx: n, portico: p };
        }),
      );
      expect(got).toEqual(CASES.map((c) => ({ case: c.name, nginx: c.paced, portico: c.paced })));
    } finally {
      await proxy.stop();
    }
  });
});
