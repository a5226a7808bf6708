// The two sides of the nginx differential suite (differential-nginx.test.ts): a real nginx
// with the parts of ingress-nginx's nginx.tmpl that act on a request's bytes, and Portico under
// --ingress-nginx-compat with the equivalent Ingress, each proxying to a raw backend of its own
// that logs the bytes it receives.
import { parseArgs } from "../../src/config/parse.ts";
import type { Config } from "../../src/config/types.ts";
import { makeBackend, makeTable, startRawProxy, answersAt, startNginx, type RawProxy, type RealNginx } from "./helpers.ts";
import { firstResponse, headFields, rawBackend, statuses, type RawBackend } from "./raw.ts";

/** What one side did with a request: the statuses the client saw, and the request upstream, if any. */
export interface Outcome {
  readonly statuses: number[];
  /** The upstream request line, or null when nothing reached the backend. */
  readonly line: string | null;
  /** The upstream request's fields by lower-case name (values in order), or null. */
  readonly fields: Record<string, string[]> | null;
  /** The upstream body as on the wire, or null. */
  readonly body: string | null;
}

export interface Side {
  /** The listening port, for requests whose answer is read whole. */
  readonly port: number;
  send(bytes: string): Promise<Outcome>;
  stop(): Promise<void>;
}

async function outcome(port: number, be: RawBackend, bytes: string): Promise<Outcome> {
  const before = be.hits.length;
  const got = await firstResponse({ port }, bytes);
  const hit = be.hits[before];
  return {
    statuses: statuses(got),
    line: hit?.line ?? null,
    fields: hit === undefined ? null : headFields(hit.head),
    body: hit?.body ?? null,
  };
}

/**
 * ingress-nginx's rendering of one server with `location /` (Prefix `/`) and its defaults
 * (internal/ingress/controller/config/config.go NewDefault; rootfs/etc/nginx/template/nginx.tmpl):
 * client_header_buffer_size 1k, large_client_header_buffers 4 8k, underscores_in_headers off,
 * ignore_invalid_headers on, client_max_body_size 1m (proxy-body-size), proxy_request_buffering
 * on, proxy_buffering off, proxy_http_version 1.1 with an upstream keepalive pool (so
 * `$connection_upgrade` is empty without Upgrade), and the location's proxy_set_header list.
 * merge_slashes is left at nginx's default (on), as the template does. The Lua parts
 * (balancer, lua_ingress rewrite) are left out: with use-forwarded-headers false they change
 * none of these fields. `proxy_pass http://upstream_balancer;` carries no URI, so the
 * request's own URI is passed unchanged.
 */
export async function nginxSide(): Promise<Side> {
  const be = await rawBackend();
  let nginx: RealNginx;
  try {
    nginx = await startNginx({
      prefix: "portico-nginx-diff-",
      http: (port) => `access_log off;
        reset_timedout_connection on;
        keepalive_timeout 75s;
        client_header_buffer_size 1k;
        large_client_header_buffers 4 8k;
        underscores_in_headers off;
        ignore_invalid_headers on;
        map $http_upgrade $connection_upgrade { default upgrade; '' ''; }
        map $http_x_request_id $req_id { default $http_x_request_id; "" $request_id; }
        upstream upstream_balancer { server 127.0.0.1:${be.port}; keepalive 320; }
        server {
          listen 127.0.0.1:${port} default_server;
          server_name _;
          location / {
            set $pass_access_scheme $scheme;
            set $pass_server_port $server_port;
            set $best_http_host $http_host;
            set $pass_port $pass_server_port;
            client_max_body_size 1m;
            proxy_set_header Host $best_http_host;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection $connection_upgrade;
            proxy_set_header X-Request-ID $req_id;
            proxy_set_header X-Real-IP $remote_addr;
            proxy_set_header X-Forwarded-For $remote_addr;
            proxy_set_header X-Forwarded-Host $best_http_host;
            proxy_set_header X-Forwarded-Port $pass_port;
            proxy_set_header X-Forwarded-Proto $pass_access_scheme;
            proxy_set_header X-Forwarded-Scheme $pass_access_scheme;
            proxy_set_header X-Scheme $pass_access_scheme;
            proxy_set_header X-Original-Forwarded-For $http_x_forwarded_for;
            proxy_set_header X-Original-Forwarded-Host $http_x_forwarded_host;
            proxy_set_header Proxy "";
            proxy_buffering off;
            proxy_request_buffering on;
            proxy_http_version 1.1;
            proxy_next_upstream error timeout;
            proxy_pass http://upstream_balancer;
          }
        }`,
      ready: answersAt("/"),
    });
  } catch (e) {
    await be.stop();
    throw e;
  }
  // The ready probe went upstream; the cases count from here.
  return {
    port: nginx.port,
    send: (bytes) => outcome(nginx.port, be, bytes),
    async stop() { await nginx.stop(); await be.stop(); },
  };
}

/** Portico's configuration as `portico --ingress-nginx-compat` parses it (ingress-nginx's defaults, config/nginx-defaults.ts). */
export function compatConfig(): Config {
  const o = parseArgs(["--manifests", "unused.yaml", "--ingress-nginx-compat"], {});
  if (o.type !== "run") throw new Error(`unexpected parse outcome ${o.type}`);
  return o.config;
}

export async function porticoSide(): Promise<Side> {
  const be = await rawBackend();
  const p: RawProxy = startRawProxy("bun-http", makeTable([{ host: null, path: "/", pathType: "Prefix", backend: makeBackend([be.port]) }]), compatConfig());
  return {
    port: p.port,
    send: (bytes) => outcome(p.port, be, bytes),
    async stop() { await p.stop(); await be.stop(); },
  };
}
