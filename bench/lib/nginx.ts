// nginx configurations for the benchmark: the backend, and a proxy configured the way
// ingress-nginx's nginx.tmpl configures one Ingress (controller v1.x defaults).
// Only integers are substituted into these templates (ports, loopback octets, worker counts,
// the number in a generated regex path); file paths come from mkdtemp and are checked to be
// plain.
import { orderLocations } from "../../src/regex/index.ts";

function int(n: number, min: number, max: number): string {
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`bad number for nginx config: ${n}`);
  return String(n);
}

function safePath(p: string): string {
  if (!/^[A-Za-z0-9/._-]+$/.test(p)) throw new Error(`unexpected characters in temp path: ${p}`);
  return p;
}

/** Shared preamble: own pid/temp paths so nginx never touches /var/lib/nginx or /run. */
function preamble(dir: string, name: string, workers: number): string {
  const d = safePath(dir);
  return `daemon off;
master_process on;
worker_processes ${int(workers, 1, 64)};
pid ${d}/${name}.pid;
error_log ${d}/${name}-error.log warn;
events { worker_connections 16384; multi_accept on; use epoll; }
`;
}

function temps(dir: string, name: string): string {
  const d = safePath(dir);
  return `  client_body_temp_path ${d}/${name}-body;
  proxy_temp_path ${d}/${name}-proxy;
  fastcgi_temp_path ${d}/${name}-fastcgi;
  uwsgi_temp_path ${d}/${name}-uwsgi;
  scgi_temp_path ${d}/${name}-scgi;
`;
}

export interface BackendPorts {
  /** Small body (13 bytes) and /1m (1 MiB file), keep-alive. */
  readonly keepalive: number;
  /** Same answers, but `Connection: close` on every response (keepalive_timeout 0). */
  readonly close: number;
  /** Port of the 200-endpoint listeners, bound on 127.0.0.<first>..<first+count-1>. */
  readonly many: number;
  readonly manyFirstOctet: number;
  readonly manyCount: number;
  /** stub_status (accepted connections: how many connections the proxies opened). */
  readonly status: number;
}

/**
 * The backend: nginx answering from memory (`return 200`), the fastest thing available here,
 * so that the proxy under test, not the backend, is the bottleneck (see the report's note).
 * `root` holds the 1 MiB file `1m`.
 */
export function backendConf(dir: string, root: string, p: BackendPorts, workers: number): string {
  const locations = `    location = /1m { root ${safePath(root)}; default_type application/octet-stream; }
    # A small answer without Content-Length (the SSI filter drops it, so nginx sends it chunked):
    # a streamed answer of the kind Portico relays through its JavaScript stream.
    location = /chunked.html { root ${safePath(root)}; ssi on; }
    location / { default_type text/plain; return 200 "hello world!\\n"; }
`;
  const many: string[] = [];
  for (let i = 0; i < p.manyCount; i++) {
    many.push(`    listen 127.0.0.${int(p.manyFirstOctet + i, 2, 254)}:${int(p.many, 1, 65535)} backlog=4096;`);
  }
  return `${preamble(dir, "backend", workers)}http {
${temps(dir, "backend")}  access_log off;
  sendfile on; tcp_nopush on; tcp_nodelay on;
  keepalive_timeout 75s;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:${int(p.keepalive, 1, 65535)} backlog=4096;
${locations}  }
  server {
    listen 127.0.0.1:${int(p.close, 1, 65535)} backlog=4096;
    keepalive_timeout 0;
${locations}  }
${
    // Without listen lines a server block listens on *:80: leave it out when there are none.
    many.length === 0 ? "" : `  server {\n${many.join("\n")}\n${locations}  }\n`
  }  server {
    listen 127.0.0.1:${int(p.status, 1, 65535)};
    location = /status { stub_status; }
  }
}
`;
}

export interface ProxyOptions {
  readonly httpPort: number;
  readonly httpsPort: number;
  /** Upstream endpoints as [last octet of 127.0.0.x, port]. */
  readonly upstreams: readonly (readonly [number, number])[];
  readonly certFile: string;
  readonly keyFile: string;
  readonly workers: number;
  /** Regex paths 0..n-1 (regexPath) instead of one `location /`; 0 or absent: none. */
  readonly regexPaths?: number;
  /** HTTP/2 on the TLS listener (ingress-nginx's use-http2 default: true). */
  readonly http2?: boolean;
}

/** The i-th regex path of the regex scenarios (Portico's Ingress and nginx's locations alike). */
export function regexPath(i: number): string {
  return `/svc${int(i, 0, 9999)}/v[0-9]+/(items|orders)(/|$)(.*)`;
}

/**
 * The locations ingress-nginx renders for one host in regex mode with these paths (template.go
 * buildLocation, `~* "^<path>"`), in its order (controller.go: longest first, then reverse
 * byte order; the same src/regex function Portico uses), then the host's implicit "/"
 * location, which goes to the default backend (a 404 here).
 */
function regexLocations(n: number, body: string): string {
  const count = Number(int(n, 1, 1000));
  const paths = orderLocations(Array.from({ length: count }, (_, i) => ({ path: regexPath(i) })));
  const blocks = paths.map((p) => `    location ~* "^${p.path}" {\n${body}    }\n`);
  return `${blocks.join("")}    location ~* "^/" { return 404; }\n`;
}

/**
 * nginx as ingress-nginx renders it for one Ingress with TLS. Taken from the controller's
 * nginx.tmpl and its ConfigMap defaults: upstream keepalive 320 / keepalive_requests 10000 /
 * keepalive_timeout 60s, proxy_http_version 1.1 with `Connection ""` (the $connection_upgrade map
 * when upstream keepalive is on), the X-Forwarded-* / X-Real-IP / X-Request-ID headers,
 * proxy-buffering "off" with 4k buffers (the ConfigMap default), proxy_next_upstream error timeout
 * (3 tries), client_max_body_size 1m, server_tokens off, access_log off (as asked).
 * Difference: ingress-nginx picks the endpoint in Lua (balancer_by_lua); nginx-light has no Lua,
 * so a static round-robin upstream is used. That makes this baseline slightly faster than the
 * real controller, never slower.
 */
export function proxyConf(dir: string, o: ProxyOptions): string {
  const servers = o.upstreams
    .map(([octet, port]) => `    server 127.0.0.${int(octet, 1, 254)}:${int(port, 1, 65535)} max_fails=0;`)
    .join("\n");
  return `${preamble(dir, "proxy", o.workers)}worker_rlimit_nofile 65535;
http {
${temps(dir, "proxy")}  access_log off;
  aio threads; aio_write on;
  tcp_nopush on; tcp_nodelay on;
  log_subrequest on;
  reset_timedout_connection on;
  keepalive_timeout 75s;
  # ingress-nginx's keep-alive-requests (1000). With http2 the HTTP/2 benchmark raises it: nginx
  # then ends each connection with GOAWAY after 1000 streams, and h2load does not reconnect.
  keepalive_requests ${o.http2 ? 1_000_000 : 1000};
  types_hash_max_size 2048;
  server_names_hash_max_size 1024;
  server_names_hash_bucket_size 64;
  map_hash_bucket_size 64;
  proxy_headers_hash_max_size 512;
  proxy_headers_hash_bucket_size 64;
  variables_hash_bucket_size 256;
  variables_hash_max_size 2048;
  underscores_in_headers off;
  ignore_invalid_headers on;
  default_type text/html;
  gzip off;
  server_tokens off;
  server_name_in_redirect off;
  port_in_redirect off;
  ssl_protocols TLSv1.2 TLSv1.3;
  ssl_session_cache shared:SSL:10m;
  ssl_session_timeout 10m;
  ssl_session_tickets off;
  ssl_buffer_size 4k;
  ssl_ciphers 'ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384';
  ssl_prefer_server_ciphers on;
  ssl_ecdh_curve auto;
  # ingress-nginx: with upstream keepalive on, a non-upgrade request sends Connection "".
  map $http_upgrade $connection_upgrade { default upgrade; '' ''; }
  upstream upstream_balancer {
${servers}
    keepalive 320;
    keepalive_time 1h;
    keepalive_timeout 60s;
    keepalive_requests 10000;
  }
  server {
    server_name bench.local;
    listen 127.0.0.1:${int(o.httpPort, 1, 65535)} default_server reuseport backlog=4096;
    listen 127.0.0.1:${int(o.httpsPort, 1, 65535)} default_server reuseport backlog=4096 ssl${o.http2 ? " http2" : ""};
    ssl_certificate ${safePath(o.certFile)};
    ssl_certificate_key ${safePath(o.keyFile)};
${o.regexPaths ? regexLocations(o.regexPaths, LOCATION_BODY) : `    location / {\n${LOCATION_BODY}    }\n`}  }
}
`;
}

/** The directives ingress-nginx renders in every location of an Ingress (nginx.tmpl). */
const LOCATION_BODY = `      port_in_redirect off;
      client_max_body_size 1m;
      proxy_set_header Host $http_host;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      proxy_set_header X-Request-ID $request_id;
      proxy_set_header X-Real-IP $remote_addr;
      proxy_set_header X-Forwarded-For $remote_addr;
      proxy_set_header X-Forwarded-Host $http_host;
      proxy_set_header X-Forwarded-Port $server_port;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Forwarded-Scheme $scheme;
      proxy_set_header X-Scheme $scheme;
      proxy_set_header X-Original-Forwarded-For $http_x_forwarded_for;
      proxy_set_header Proxy "";
      proxy_connect_timeout 5s;
      proxy_send_timeout 60s;
      proxy_read_timeout 60s;
      proxy_buffering off;
      proxy_buffer_size 4k;
      proxy_buffers 4 4k;
      proxy_max_temp_file_size 1024m;
      proxy_request_buffering on;
      proxy_http_version 1.1;
      proxy_cookie_domain off;
      proxy_cookie_path off;
      proxy_next_upstream error timeout;
      proxy_next_upstream_timeout 0;
      proxy_next_upstream_tries 3;
      proxy_redirect off;
      proxy_pass http://upstream_balancer;
`;

/**
 * nginx proxying gRPC as ingress-nginx renders `backend-protocol: GRPC`: an HTTP/2 TLS
 * listener and `grpc_pass grpc://` with the same X-Forwarded-* headers (grpc_set_header), and
 * grpc_*_timeout set from the proxy-*-timeout defaults, as its template does. Without upstream
 * keepalive: with it, every second call failed (5xx, measured against the grpc-js server
 * under Bun, one connection, calls in sequence), so each call opens its own connection.
 */
export function grpcProxyConf(dir: string, o: { httpsPort: number; upstreamPort: number; certFile: string; keyFile: string }): string {
  return `${preamble(dir, "grpc-proxy", 1)}worker_rlimit_nofile 65535;
http {
${temps(dir, "grpc-proxy")}
  access_log off;
  tcp_nodelay on;
  keepalive_timeout 75s;
  # Raised from ingress-nginx's 1000, as for proxyConf with http2 (h2load does not reconnect).
  keepalive_requests 1000000;
  ssl_protocols TLSv1.2 TLSv1.3;
  ssl_session_cache shared:SSL:10m;
  ssl_session_tickets off;
  upstream upstream_grpc {
    server 127.0.0.1:${int(o.upstreamPort, 1, 65535)} max_fails=0;
  }
  server {
    server_name grpc.local;
    listen 127.0.0.1:${int(o.httpsPort, 1, 65535)} default_server reuseport backlog=4096 ssl http2;
    ssl_certificate ${safePath(o.certFile)};
    ssl_certificate_key ${safePath(o.keyFile)};
    location / {
      grpc_set_header Host $http_host;
      grpc_set_header X-Request-ID $request_id;
      grpc_set_header X-Real-IP $remote_addr;
      grpc_set_header X-Forwarded-For $remote_addr;
      grpc_set_header X-Forwarded-Host $http_host;
      grpc_set_header X-Forwarded-Port $server_port;
      grpc_set_header X-Forwarded-Proto $scheme;
      grpc_connect_timeout 5s;
      grpc_send_timeout 60s;
      grpc_read_timeout 60s;
      grpc_next_upstream error timeout;
      grpc_pass grpc://upstream_grpc;
    }
  }
}
`;
}
