// What the data-plane benchmark measures: scenarios and CPU layouts.

/** `baseline` is Portico from another tree (`--baseline-main`), run beside `portico` for before/after ratios. */
export type SystemName = "portico" | "baseline" | "nginx" | "direct";
export const SYSTEMS: readonly SystemName[] = ["portico", "baseline", "nginx", "direct"];

export interface Scenario {
  readonly name: string;
  readonly title: string;
  readonly connections: number;
  readonly path: string;
  readonly tls: boolean;
  readonly backend: "keepalive" | "close" | "many";
  /** Body size the probe expects before the system is loaded. */
  readonly bytes: number;
  readonly systems: readonly SystemName[];
  /**
   * The host has this many regex paths (ingress-nginx's use-regex, bench/lib/nginx.ts
   * regexPath) instead of one Prefix `/`; `path` matches the last of them nginx tries.
   */
  readonly regexPaths?: number;
  /** Annotations on Portico's Ingress (nginx is configured as for a plain Ingress). */
  readonly annotations?: Readonly<Record<string, string>>;
  /** Extra request headers wrk sends. */
  readonly headers?: readonly string[];
  /**
   * A second Ingress for the same host and path with `canary: "true"` and these annotations
   * (its backend is the same Service, so every answer is the same: the split is what is measured).
   */
  readonly canary?: Readonly<Record<string, string>>;
}

const MIB = 1024 * 1024;

export const SCENARIOS: readonly Scenario[] = [
  { name: "small", title: "13-byte body, keep-alive, wrk -c64", connections: 64, path: "/", tls: false, backend: "keepalive", bytes: 13, systems: SYSTEMS },
  { name: "1mib", title: "1 MiB body, keep-alive, wrk -c8", connections: 8, path: "/1m", tls: false, backend: "keepalive", bytes: MIB, systems: SYSTEMS },
  { name: "close", title: "backend sends Connection: close on every response, wrk -c64", connections: 64, path: "/", tls: false, backend: "close", bytes: 13, systems: SYSTEMS },
  { name: "tls", title: "TLS termination (RSA-2048, TLS 1.3, keep-alive), 13-byte body, wrk -c64", connections: 64, path: "/", tls: true, backend: "keepalive", bytes: 13, systems: ["portico", "baseline", "nginx"] },
  // Each feature on, against the plain `small`: nginx runs its plain configuration, `baseline`
  // (main's Portico, where these annotations may be unsupported) shows the feature's cost.
  {
    name: "small-affinity", title: "small, with `affinity: cookie` and a returning client (wrk sends a session cookie)", connections: 64, path: "/", tls: false,
    backend: "keepalive", bytes: 13, systems: ["portico", "baseline", "nginx"],
    annotations: { "nginx.ingress.kubernetes.io/affinity": "cookie" }, headers: ["Cookie: INGRESSCOOKIE=0123456789abcdef|5e2b4a1c"],
  },
  {
    name: "small-hash", title: "small, with `upstream-hash-by: $request_uri`", connections: 64, path: "/", tls: false,
    backend: "keepalive", bytes: 13, systems: ["portico", "baseline", "nginx"],
    annotations: { "nginx.ingress.kubernetes.io/upstream-hash-by": "$request_uri" },
  },
  {
    name: "small-limit", title: "small, with `limit-rps: 1000000` (counted, never reached)", connections: 64, path: "/", tls: false,
    backend: "keepalive", bytes: 13, systems: ["portico", "baseline", "nginx"],
    annotations: { "nginx.ingress.kubernetes.io/limit-rps": "1000000" },
  },
  {
    name: "small-canary", title: "small, with a canary Ingress at `canary-weight: 20` (ingress-nginx's weighted split on every request)", connections: 64, path: "/", tls: false,
    backend: "keepalive", bytes: 13, systems: ["portico", "baseline", "nginx"],
    canary: { "nginx.ingress.kubernetes.io/canary-weight": "20" },
  },
  { name: "ep200", title: "200 endpoints (127.0.0.10-209) behind one Service, 13-byte body, wrk -c64", connections: 64, path: "/", tls: false, backend: "many", bytes: 13, systems: SYSTEMS },
  {
    name: "regex50",
    title: "a host with 50 regex paths (use-regex; nginx: 50 `location ~*` blocks in ingress-nginx's order), the request matching the last one tried, 13-byte body, wrk -c64",
    connections: 64, path: "/svc0/v1/items/42", tls: false, backend: "keepalive", bytes: 13, systems: ["portico", "baseline", "nginx"], regexPaths: 50,
  },
];

export interface Layout {
  readonly name: string;
  /** CPUs for the proxy under test (null: no pinning). */
  readonly proxyCpus: string | null;
  /** CPUs shared by wrk and the backend. */
  readonly clientCpus: string | null;
  readonly description: string;
}

export const LAYOUTS: readonly Layout[] = [
  {
    name: "pinned",
    proxyCpus: "0",
    clientCpus: "1",
    description: "pinned: the proxy under test alone on CPU 0 (`taskset -c 0`); wrk and the backend share CPU 1. For `direct`, wrk and the backend share CPU 1 and CPU 0 is idle.",
  },
  {
    name: "unpinned",
    proxyCpus: null,
    clientCpus: null,
    description: "unpinned: no affinity; wrk, backend and proxy share both CPUs as the scheduler decides.",
  },
];
