// The one table of flags: names, env twins, help text, defaults and value schemas all come
// from here, so parsing, `--help`, the environment and the README's flag table
// (scripts/flags-table.ts) cannot drift apart.
import { availableParallelism } from "node:os";
import type { Config } from "./types.ts";
import * as val from "./values.ts";
import { DEFAULT_HEADER_BUFFERS } from "./header-buffers.ts";

export interface FlagSpec<T> {
  /** Flag name without the leading `--`. */
  readonly name: string;
  /** Value placeholder in help; null for a boolean switch (bare `--flag` means true). */
  readonly metavar: string | null;
  readonly help: string;
  /** The default as shown in help. */
  readonly defaultText: string;
  readonly schema: val.ValueSchema<T>;
  readonly fallback: () => T;
  /** Other names the flag is read under (ingress-nginx's, for a drop-in command line). */
  readonly aliases?: readonly string[];
}

/** Mozilla "intermediate" TLS 1.2 suites: ECDHE key exchange with AES-GCM or ChaCha20-Poly1305 only. */
export const DEFAULT_TLS_CIPHERS = [
  "ECDHE-ECDSA-AES128-GCM-SHA256",
  "ECDHE-RSA-AES128-GCM-SHA256",
  "ECDHE-ECDSA-AES256-GCM-SHA384",
  "ECDHE-RSA-AES256-GCM-SHA384",
  "ECDHE-ECDSA-CHACHA20-POLY1305",
  "ECDHE-RSA-CHACHA20-POLY1305",
].join(":");

const none = () => null;

/** ingress-nginx's brotli-types default (config.go brotliTypes). */
export const DEFAULT_BROTLI_TYPES: readonly string[] = Object.freeze(
  "application/xml+rss application/atom+xml application/javascript application/x-javascript application/json application/rss+xml application/vnd.ms-fontobject application/x-font-ttf application/x-web-app-manifest+json application/xhtml+xml application/xml font/opentype image/svg+xml image/x-icon text/css text/javascript text/plain text/x-component".split(" "),
);

/** ingress-nginx's gzip-types default (internal/ingress/controller/config/config.go gzipTypes). */
export const DEFAULT_GZIP_TYPES: readonly string[] = Object.freeze(
  "application/atom+xml application/javascript application/x-javascript application/json application/rss+xml application/vnd.ms-fontobject application/x-font-ttf application/x-web-app-manifest+json application/xhtml+xml application/xml font/opentype image/svg+xml image/x-icon text/css text/javascript text/plain text/x-component".split(" "),
);

// Keyed by Config field: the compiler rejects a Config field without a flag, or a schema whose
// output does not match the field's type. Insertion order is the order in `--help`.
export const FLAGS: { readonly [K in keyof Config]: FlagSpec<Config[K]> } = {
  kubeconfig: { name: "kubeconfig", metavar: "PATH", help: "kubeconfig file of the cluster to watch (not with --manifests)", defaultText: "$KUBECONFIG, then in-cluster, then ~/.kube/config", schema: val.nonEmpty, fallback: none },
  context: { name: "context", metavar: "NAME", help: "kubeconfig context to use", defaultText: "the current context", schema: val.nonEmpty, fallback: none },
  manifests: { name: "manifests", metavar: "PATH", help: "serve from a YAML file or a folder of them instead of a cluster (watched for changes; not with --kubeconfig or --context)", defaultText: "none", schema: val.nonEmpty, fallback: none },
  watchNamespace: { name: "watch-namespace", metavar: "NS", help: "restrict watches to one namespace", defaultText: "all namespaces", schema: val.dnsLabel, fallback: none },
  httpPort: { name: "http-port", metavar: "N", help: "plain HTTP listener port", defaultText: "8080", schema: val.port, fallback: () => 8080 },
  httpsPort: { name: "https-port", metavar: "N", help: "TLS listener port", defaultText: "8443", schema: val.port, fallback: () => 8443 },
  adminPort: { name: "admin-port", metavar: "N", help: "port for /healthz, /readyz, /metrics and /debug/* (see --debug-allow)", defaultText: "10254", schema: val.port, fallback: () => 10254 },
  bind: { name: "bind", metavar: "ADDR", help: "listen address for all listeners: an IP address of this host, or localhost", defaultText: "0.0.0.0", schema: val.listenAddress, fallback: () => "0.0.0.0" },
  // The debug endpoints show every tenant's routes and pod addresses: loopback only unless
  // opened (kubectl port-forward arrives on the pod's loopback).
  debugAllow: { name: "debug-allow", metavar: "CIDR[,CIDR]", help: "peers that may read /debug/* on the admin port (/healthz, /readyz and /metrics answer every peer)", defaultText: "127.0.0.0/8,::1 (loopback)", schema: val.cidrList("127.0.0.0/8,::1"), fallback: () => Object.freeze(["127.0.0.0/8", "::1/128"]) },
  ingressClass: { name: "ingress-class", metavar: "NAME", help: "IngressClass name this controller serves", defaultText: "portico", schema: val.dnsSubdomain, fallback: () => "portico" },
  controllerName: { name: "controller-name", aliases: ["controller-class"], metavar: "S", help: "spec.controller value of our IngressClasses (also read as --controller-class, ingress-nginx's name)", defaultText: "portico.dev/ingress-controller", schema: val.controllerName, fallback: () => "portico.dev/ingress-controller" },
  gatewayControllerName: { name: "gateway-controller-name", metavar: "S", help: "spec.controllerName of the GatewayClasses this controller serves (Gateway API)", defaultText: "portico.dev/gateway-controller", schema: val.controllerName, fallback: () => "portico.dev/gateway-controller" },
  // Off by default: Gateways share the two traffic ports and one address (docs/design.md
  // "Gateway API"). On, each Gateway gets ports from this range and a Service of its own.
  gatewayPorts: { name: "gateway-ports", metavar: "FROM-TO", help: "give each Gateway its own ports from this range, behind a Service Portico creates beside --publish-service (same namespace, selector and type), whose address the Gateway publishes", defaultText: "off: Gateways share --http-port and --https-port", schema: val.portRange, fallback: none },
  watchIngressWithoutClass: { name: "watch-ingress-without-class", metavar: null, help: "also serve Ingresses that name no class", defaultText: "false", schema: val.bool, fallback: () => false },
  // ingress-nginx's --disable-catch-all (cmd/nginx/flags.go, default false): its store drops
  // every Ingress with spec.defaultBackend, rules and all (store.go hasCatchAllIngressRule).
  disableCatchAll: { name: "disable-catch-all", metavar: null, help: "ignore every Ingress that sets spec.defaultBackend (a catch-all), its rules too, as ingress-nginx's flag does", defaultText: "false", schema: val.bool, fallback: () => false },
  // ingress-nginx's defaults (--ingress-class nginx, --controller-class k8s.io/ingress-nginx)
  // and its class rules: README "Migrating from ingress-nginx", docs/design.md "Ingress decisions".
  ingressNginxCompat: { name: "ingress-nginx-compat", metavar: null, help: "take the Ingresses ingress-nginx takes: --ingress-class nginx and --controller-name k8s.io/ingress-nginx unless those are given, its class rules (kubernetes.io/ingress.class must equal --ingress-class; no default IngressClass), and its defaults where they differ (README: ingress-nginx's defaults)", defaultText: "false", schema: val.bool, fallback: () => false },
  defaultSslCertificate: { name: "default-ssl-certificate", metavar: "NS/NAME", help: "kubernetes.io/tls Secret served for unmatched SNI", defaultText: "a generated self-signed certificate", schema: val.nsName, fallback: none },
  defaultBackendService: { name: "default-backend-service", metavar: "NS/NAME:PORT", help: "Service (port number or name) that takes requests no rule matches, instead of 404", defaultText: "none", schema: val.nsNamePort, fallback: none },
  // ingress-nginx's ConfigMap key custom-http-errors: 300-599 (configmap.go filterErrors).
  customHttpErrors: { name: "custom-http-errors", metavar: "N[,N]", help: "statuses (300-599) that --default-backend-service answers instead, on routes without their own custom-http-errors", defaultText: "none", schema: val.statusList(300, 599), fallback: () => Object.freeze([]) },
  allowExternalNameServices: { name: "allow-external-name-services", metavar: null, help: "proxy to ExternalName Services (off: they answer 503); even on, never to loopback, link-local, unspecified, cloud metadata or this pod's own addresses", defaultText: "false", schema: val.bool, fallback: () => false },
  publishService: { name: "publish-service", metavar: "NS/NAME", help: "Service whose load-balancer address is written to Ingress status", defaultText: "none", schema: val.nsName, fallback: none },
  publishStatusAddress: { name: "publish-status-address", metavar: "A[,A]", help: "addresses written to Ingress status (wins over --publish-service)", defaultText: "none", schema: val.addressList, fallback: none },
  // Off while another controller (ingress-nginx, side by side) owns the status of the same Ingresses.
  updateStatus: { name: "update-status", metavar: null, help: "write our address to the status of the Ingresses we serve (leader only); --update-status=false leaves status to another controller", defaultText: "true", schema: val.bool, fallback: () => true },
  electionId: { name: "election-id", metavar: "NAME", help: "Lease name for leader election (the leader writes status)", defaultText: "portico-leader", schema: val.dnsSubdomain, fallback: () => "portico-leader" },
  electionNamespace: { name: "election-namespace", metavar: "NS", help: "namespace of the Lease", defaultText: "$POD_NAMESPACE, then the service-account namespace, then default", schema: val.dnsLabel, fallback: none },
  logLevel: { name: "log-level", metavar: "LEVEL", help: "debug, info, warn or error", defaultText: "info", schema: val.oneOf(["debug", "info", "warn", "error"]), fallback: () => "info" },
  logFormat: { name: "log-format", metavar: "FORMAT", help: "json or text", defaultText: "json", schema: val.oneOf(["json", "text"]), fallback: () => "json" },
  accessLog: { name: "access-log", metavar: "DEST", help: "stdout or off", defaultText: "stdout", schema: val.oneOf(["stdout", "off"]), fallback: () => "stdout" },
  // ingress-nginx's log-format-upstream and log-format-escape-json / -none (nginx.tmpl
  // `log_format upstreaminfo escape=... '<format>'`; log/template.ts).
  accessLogTemplate: { name: "access-log-template", metavar: "FORMAT", help: "write each access-log line as this nginx log_format, its variables ($remote_addr, $request, $status, $http_<name>...) expanded; unknown ones are logged as nginx logs an empty one; `ingress-nginx` names ingress-nginx's default log-format-upstream", defaultText: "none: Portico's own fields (--log-format)", schema: val.logFormatText, fallback: none },
  accessLogEscape: { name: "access-log-escape", metavar: "MODE", help: "how --access-log-template escapes variable values: default (nginx's \\xHH), json or none", defaultText: "default", schema: val.oneOf(["default", "json", "none"]), fallback: () => "default" },
  maxBodySize: { name: "max-body-size", metavar: "SIZE", help: "largest request body (bytes, or 512k, 10m, 1g; 0 = unlimited); larger gets 413", defaultText: "unlimited", schema: val.bodySize, fallback: none },
  // nginx's large_client_header_buffers, as ingress-nginx sets it (config.go: `4 8k`); bounded by the
  // parser limit Portico runs Bun with (config/header-buffers.ts).
  largeClientHeaderBuffers: { name: "large-client-header-buffers", metavar: "\"N SIZE\"", help: "the longest request line or header line (SIZE, CRLF included) and the largest request head (N × SIZE, at most 64k); a longer request line gets 414, a longer header line or head 400 under --ingress-nginx-compat, a larger head 431 without it", defaultText: "4 8k", schema: val.headerBuffers, fallback: () => DEFAULT_HEADER_BUFFERS },
  trustedProxies: { name: "trusted-proxies", metavar: "CIDR[,CIDR]", help: "peers whose X-Forwarded-For gives the client address (and whose X-Forwarded-Proto, -Host, -Port are believed, see --trusted-proxy-headers)", defaultText: "none", schema: val.cidrList("10.0.0.0/8,fd00::/8"), fallback: () => Object.freeze([]) },
  // ingress-nginx's enable-real-ip believes the address only (nginx.tmpl: real_ip_header
  // X-Forwarded-For, and nothing else); use-forwarded-headers also X-Forwarded-Proto/-Host/-Port
  // (rootfs/etc/nginx/lua/lua_ingress.lua rewrite()).
  trustedProxyHeaders: { name: "trusted-proxy-headers", metavar: "WHICH", help: "what a --trusted-proxies peer is believed on: all (client address, X-Forwarded-Proto, -Host, -Port) or address (the client address from X-Forwarded-For only)", defaultText: "all", schema: val.oneOf(["all", "address"]), fallback: () => "all" },
  // ingress-nginx's compute-full-forwarded-for (default false: X-Forwarded-For is $remote_addr,
  // nginx.tmpl proxy_set_header X-Forwarded-For); Portico's own default appends.
  computeFullForwardedFor: { name: "compute-full-forwarded-for", metavar: null, help: "append the peer to a --trusted-proxies peer's X-Forwarded-For; false sends the client address alone, as ingress-nginx by default", defaultText: "true", schema: val.bool, fallback: () => true },
  // ingress-nginx's ConfigMap keys of the same names: an Ingress's annotation replaces the list of its own kind.
  allowlistSourceRange: { name: "allowlist-source-range", metavar: "CIDR[,CIDR]", help: "client ranges allowed on Ingresses without their own allowlist-source-range (others get 403)", defaultText: "all", schema: val.sourceRangeList("10.0.0.0/8,2001:db8::/32"), fallback: () => Object.freeze([]) },
  denylistSourceRange: { name: "denylist-source-range", metavar: "CIDR[,CIDR]", help: "client ranges refused (403) on Ingresses without their own denylist-source-range", defaultText: "none", schema: val.sourceRangeList("192.0.2.0/24"), fallback: () => Object.freeze([]) },
  // ingress-nginx's block-cidrs, block-user-agents, block-referers (config.go, nginx.tmpl's http
  // block `deny` and its `map`s): every request of every host, default route included (403).
  blockCidrs: { name: "block-cidrs", metavar: "CIDR[,CIDR]", help: "client ranges refused (403) on every host and path, whatever an Ingress allows", defaultText: "none", schema: val.sourceRangeList("192.0.2.0/24"), fallback: () => Object.freeze([]) },
  blockUserAgents: { name: "block-user-agents", metavar: "UA[,UA]", help: "User-Agent values refused (403) on every host and path: an exact value (any case), or a regular expression after ~ (case-sensitive) or ~* (any case), unanchored", defaultText: "none", schema: val.blockPatternList, fallback: () => Object.freeze([]) },
  blockReferers: { name: "block-referers", metavar: "REFERER[,REFERER]", help: "Referer values refused (403) on every host and path, written as for --block-user-agents", defaultText: "none", schema: val.blockPatternList, fallback: () => Object.freeze([]) },
  // ingress-nginx's add-headers and proxy-set-headers (config.go; nginx.go reads the ConfigMap
  // each names): fields for every answer, and for every request sent to a pod.
  addHeaders: { name: "add-headers", metavar: "NS/NAME", help: "ConfigMap whose entries are set on every answer (values may use nginx variables such as $host)", defaultText: "none", schema: val.nsName, fallback: () => null },
  proxySetHeaders: { name: "proxy-set-headers", metavar: "NS/NAME", help: "ConfigMap whose entries are set on every request sent to a pod (values may use nginx variables such as $remote_addr)", defaultText: "none", schema: val.nsName, fallback: () => null },
  connectTimeoutMs: { name: "connect-timeout", metavar: "DURATION", help: "upstream connect deadline (500ms, 5s, 2m, 1h; a plain number is seconds)", defaultText: "5s", schema: val.duration(1), fallback: () => 5_000 },
  responseTimeoutMs: { name: "response-timeout", metavar: "DURATION", help: "deadline for upstream response headers; past it the client gets 504", defaultText: "60s", schema: val.duration(1), fallback: () => 60_000 },
  streamIdleTimeoutMs: { name: "stream-idle-timeout", metavar: "DURATION", help: "close a body stream or WebSocket idle this long", defaultText: "5m", schema: val.duration(1), fallback: () => 300_000 },
  // nginx's client_header_timeout (ingress-nginx ConfigMap client-header-timeout, 60): a total
  // deadline for a request's header block, so a client trickling header bytes cannot hold a
  // connection. Enforced on the HTTP/2 listener's HTTP/1.1 side (docs/design.md, "Request framing and bodies").
  clientHeaderTimeoutMs: { name: "client-header-timeout", metavar: "DURATION", help: "longest time a request's header block may take to arrive on the HTTPS port's HTTP/1.1 side; slower clients are disconnected (enforced only while a gRPC or client-certificate route puts that port on node:http2)", defaultText: "60s", schema: val.duration(1), fallback: () => 60_000 },
  clientBodyTimeoutMs: { name: "client-body-timeout", metavar: "DURATION", help: "longest wait for the next bytes of a request body; past it the client gets 408 (with --ingress-nginx-compat, as from nginx: no answer and a reset)", defaultText: "60s", schema: val.duration(1), fallback: () => 60_000 },
  clientBodyMinRate: { name: "client-body-min-rate", metavar: "RATE", help: "bytes per second a request body must average, beyond a first --client-body-timeout of waiting (0 = no minimum); slower is cut as by --client-body-timeout", defaultText: "500 bytes/s", schema: val.byteRate, fallback: () => 500 },
  // ingress-nginx's ConfigMap limit-rate / limit-rate-after (defaults.Backend: the value of every
  // location without the annotation; nginx.tmpl `limit_rate <n>k`, `limit_rate_after <n>k`).
  limitRate: { name: "limit-rate", metavar: "SIZE", help: "bytes per second each buffered response is sent at (proxy-buffering on or the pod's X-Accel-Buffering: yes, as nginx), after --limit-rate-after (512k, 1m; 0 = unlimited), for routes without a limit-rate annotation", defaultText: "0", schema: val.byteSize, fallback: () => 0 },
  limitRateAfter: { name: "limit-rate-after", metavar: "SIZE", help: "bytes of each response sent at full speed before --limit-rate applies, for routes without a limit-rate-after annotation", defaultText: "0", schema: val.byteSize, fallback: () => 0 },
  // ingress-nginx reads every request body before it contacts a pod (proxy-request-buffering
  // on, spilling past client-body-buffer-size to a temp file); Portico has no disk it may
  // write, so it holds bodies in memory up to these bounds and streams the rest.
  requestBufferSize: { name: "request-buffer-size", metavar: "SIZE", help: "largest request body read whole before a pod is contacted (0 = stream every body); larger bodies stream", defaultText: "1m", schema: val.byteSize, fallback: () => 1024 * 1024 },
  requestBufferBudget: { name: "request-buffer-budget", metavar: "SIZE", help: "bytes all buffered request bodies of this process may hold at once; a body that does not fit streams (0 = stream every body)", defaultText: "64m", schema: val.byteSize, fallback: () => 64 * 1024 * 1024 },
  // ingress-nginx's ConfigMap proxy-buffering / proxy-buffer-size (defaults.Backend: off, 4k;
  // nginx.tmpl proxy_buffering, proxy_buffer_size and proxy_buffers' size in every location).
  proxyBuffering: { name: "proxy-buffering", metavar: null, help: "hold a streamed answer until a --proxy-buffer-size buffer is full or it ends, as nginx's proxy_buffering (the pod's X-Accel-Buffering: yes/no decides per answer), for routes without a proxy-buffering annotation", defaultText: "false", schema: val.bool, fallback: () => false },
  proxyBufferSize: { name: "proxy-buffer-size", metavar: "SIZE", help: "the buffers' size with proxy buffering (at most 1m is held), for routes without a proxy-buffer-size annotation", defaultText: "4k", schema: val.responseBufferSize, fallback: () => 4096 },
  maxResponseHeaderSize: { name: "max-response-header-size", metavar: "SIZE", help: "largest upstream response header block (bytes, or 16k, 1m); larger gets 502", defaultText: "64k", schema: val.headerSize, fallback: () => 64 * 1024 },
  enableUnderscoresInHeaders: { name: "enable-underscores-in-headers", metavar: null, help: "forward request headers whose names contain underscores (dropped otherwise, as nginx does)", defaultText: "false", schema: val.bool, fallback: () => false },
  shutdownDelayMs: { name: "shutdown-delay", metavar: "DURATION", help: "on SIGTERM, keep serving this long before draining (lets endpoints update; skipped if never ready)", defaultText: "5s", schema: val.duration(0), fallback: () => 5_000 },
  shutdownGracePeriodMs: { name: "shutdown-grace-period", metavar: "DURATION", help: "longest wait for in-flight requests while draining", defaultText: "30s", schema: val.duration(0), fallback: () => 30_000 },
  limitReqStatusCode: { name: "limit-req-status-code", metavar: "N", help: "status of a request over an Ingress's limit-rps or limit-rpm (400-599)", defaultText: "503", schema: val.integer(400, 599), fallback: () => 503 },
  limitConnStatusCode: { name: "limit-conn-status-code", metavar: "N", help: "status of a request over an Ingress's limit-connections (400-599)", defaultText: "503", schema: val.integer(400, 599), fallback: () => 503 },
  // ingress-nginx's ConfigMap key server-tokens (false by default: no Server field at all,
  // nginx.tmpl `more_clear_headers Server`); true names Portico, not nginx (headers.ts PORTICO_SERVER).
  serverHeader: { name: "server-header", metavar: "WHICH", help: "the Server field of answers: backend (the pod's passed on, none of Portico's own), none (no Server field, ingress-nginx's server-tokens false) or portico (portico/<version> on every answer, the pod's replaced: server-tokens true)", defaultText: "backend", schema: val.oneOf(["backend", "none", "portico"]), fallback: () => "backend" },
  // ingress-nginx's ConfigMap use-gzip, gzip-level, gzip-min-length, gzip-types, gzip-disable
  // (config.go NewDefault: off, 1, 256, the list below; nginx.tmpl's gzip block).
  gzip: { name: "gzip", metavar: null, help: "gzip answers of the --gzip-types of at least --gzip-min-length bytes to clients that accept it (ingress-nginx's use-gzip)", defaultText: "false", schema: val.bool, fallback: () => false },
  gzipLevel: { name: "gzip-level", metavar: "N", help: "with --gzip: compression level 1-9", defaultText: "1", schema: val.integer(1, 9), fallback: () => 1 },
  gzipMinLength: { name: "gzip-min-length", metavar: "BYTES", help: "with --gzip: answers whose Content-Length is smaller are sent as they are (answers without one are compressed)", defaultText: "256", schema: val.integer(0, 2 ** 31 - 1), fallback: () => 256 },
  gzipTypes: { name: "gzip-types", metavar: "TYPE[,TYPE]", help: "with --gzip: media types compressed (* for any); text/html always is", defaultText: "ingress-nginx's gzip-types default (17 types: JSON, JavaScript, XML, CSS, plain text, SVG, fonts and the like)", schema: val.mediaTypeList, fallback: () => DEFAULT_GZIP_TYPES },
  gzipDisable: { name: "gzip-disable", metavar: "REGEX", help: "with --gzip: no compression for clients whose User-Agent matches this case-insensitive regular expression (msie6: nginx's test for MSIE 4-6)", defaultText: "none", schema: val.userAgentPattern, fallback: none },
  // ingress-nginx's enable-brotli, brotli-level, brotli-min-length, brotli-types (config.go
  // NewDefault: off, 4, 20, the list below; nginx.tmpl's brotli block).
  brotli: { name: "brotli", metavar: null, help: "brotli-compress answers of the --brotli-types of at least --brotli-min-length bytes to clients that accept br, before gzip (ingress-nginx's enable-brotli)", defaultText: "false", schema: val.bool, fallback: () => false },
  brotliLevel: { name: "brotli-level", metavar: "N", help: "with --brotli: quality 0-11, for answers read whole and streamed alike", defaultText: "4", schema: val.integer(0, 11), fallback: () => 4 },
  brotliMinLength: { name: "brotli-min-length", metavar: "BYTES", help: "with --brotli: answers whose Content-Length is smaller are not brotli-compressed", defaultText: "20", schema: val.integer(0, 2 ** 31 - 1), fallback: () => 20 },
  brotliTypes: { name: "brotli-types", metavar: "TYPE[,TYPE]", help: "with --brotli: media types compressed (* for any); text/html always is", defaultText: "ingress-nginx's brotli-types default (18 types, gzip's and application/xml+rss)", schema: val.mediaTypeList, fallback: () => DEFAULT_BROTLI_TYPES },
  hsts: { name: "hsts", metavar: null, help: "send Strict-Transport-Security on HTTPS responses (--hsts=false to turn off)", defaultText: "true", schema: val.bool, fallback: () => true },
  hstsMaxAge: { name: "hsts-max-age", metavar: "SECONDS", help: "max-age of Strict-Transport-Security", defaultText: "31536000", schema: val.integer(0, 2 ** 31 - 1), fallback: () => 31_536_000 },
  hstsIncludeSubdomains: { name: "hsts-include-subdomains", metavar: null, help: "add includeSubDomains to Strict-Transport-Security", defaultText: "false", schema: val.bool, fallback: () => false },
  hstsPreload: { name: "hsts-preload", metavar: null, help: "add preload to Strict-Transport-Security", defaultText: "false", schema: val.bool, fallback: () => false },
  // ingress-nginx's ConfigMap keys ssl-redirect and force-ssl-redirect: an Ingress's own annotation wins.
  sslRedirect: { name: "ssl-redirect", metavar: null, help: "redirect HTTP to HTTPS for hosts in spec.tls, on Ingresses without their own ssl-redirect (--ssl-redirect=false to turn off)", defaultText: "true", schema: val.bool, fallback: () => true },
  forceSslRedirect: { name: "force-ssl-redirect", metavar: null, help: "redirect HTTP to HTTPS for every host, on Ingresses without their own force-ssl-redirect", defaultText: "false", schema: val.bool, fallback: () => false },
  // ingress-nginx's ConfigMap keys of the same names: an Ingress's own annotation wins (relative-redirects: either turns it on).
  usePortInRedirects: { name: "use-port-in-redirects", metavar: null, help: "put the port in the redirects Portico makes, on Ingresses without their own use-port-in-redirects", defaultText: "false", schema: val.bool, fallback: () => false },
  preserveTrailingSlash: { name: "preserve-trailing-slash", metavar: null, help: "keep the trailing / in the HTTPS redirect, on Ingresses without their own preserve-trailing-slash", defaultText: "false", schema: val.bool, fallback: () => false },
  proxyRedirectFrom: { name: "proxy-redirect-from", metavar: "WORD", help: "proxy-redirect-from for every Ingress without a readable annotation of its own (ingress-nginx's ConfigMap key): off, default, a Location prefix or ~regex", defaultText: "off", schema: val.proxyRewriteValue(1, "off or default or one word"), fallback: () => "off" },
  proxyRedirectTo: { name: "proxy-redirect-to", metavar: "WORD", help: "proxy-redirect-to for every Ingress without a readable annotation of its own (ingress-nginx's ConfigMap key)", defaultText: "off", schema: val.proxyRewriteValue(1, "off or one word"), fallback: () => "off" },
  proxyCookieDomain: { name: "proxy-cookie-domain", metavar: "FROM TO", help: "proxy-cookie-domain for every Ingress without a readable annotation of its own (ingress-nginx's ConfigMap key): off or two words", defaultText: "off", schema: val.proxyRewriteValue(2, "off or two words"), fallback: () => "off" },
  proxyCookiePath: { name: "proxy-cookie-path", metavar: "FROM TO", help: "proxy-cookie-path for every Ingress without a readable annotation of its own (ingress-nginx's ConfigMap key): off or two words", defaultText: "off", schema: val.proxyRewriteValue(2, "off or two words"), fallback: () => "off" },
  relativeRedirects: { name: "relative-redirects", metavar: null, help: "send permanent-redirect and temporal-redirect URLs that start with / as written (nginx absolute_redirect off), on every Ingress", defaultText: "false", schema: val.bool, fallback: () => false },
  // ingress-nginx's ConfigMap key proxy-ssl-location-only (config.go ProxySSLLocationOnly; controller.go createServers).
  proxySslLocationOnly: { name: "proxy-ssl-location-only", metavar: null, help: "apply an Ingress's proxy-ssl-* to its own paths only; by default, as ingress-nginx's server block, the host's first Ingress with a proxy-ssl-secret holding ca.crt also covers the host's paths that set none", defaultText: "false", schema: val.bool, fallback: () => false },
  // ingress-nginx's ConfigMap key no-auth-locations (config.go NewDefault: the ACME HTTP-01 path).
  // ingress-nginx's global-allowed-response-headers (config.go AllowedResponseHeaders, default
  // none): the only names the custom-headers annotation may set (customheaders/main.go).
  globalAllowedResponseHeaders: { name: "global-allowed-response-headers", metavar: "NAME[,NAME]", help: "response header names the custom-headers annotation may set (exact spelling); any other makes its Ingress answer 503", defaultText: "none", schema: val.headerNameList, fallback: () => Object.freeze([]) },
  noAuthLocations: { name: "no-auth-locations", metavar: "PATH[,PATH]", help: "rule paths (as written) starting with one of these run no basic or external authentication (auth-type, auth-url)", defaultText: "/.well-known/acme-challenge", schema: val.locationList, fallback: () => Object.freeze(["/.well-known/acme-challenge"]) },
  // ingress-nginx's ConfigMap keys global-auth-*: external authentication for every route whose
  // Ingress sets no auth-url (docs/design.md "External authentication"). Read as written; the
  // compiler checks them as the auth-url annotations, and an invalid one refuses those routes.
  globalAuthUrl: { name: "global-auth-url", metavar: "URL", help: "auth service asked before every request of a route whose Ingress sets no auth-url and not enable-global-auth: \"false\" (as the auth-url annotation)", defaultText: "none", schema: val.optionalText, fallback: none },
  globalAuthMethod: { name: "global-auth-method", metavar: "METHOD", help: "method of the --global-auth-url request (as auth-method)", defaultText: "GET", schema: val.optionalText, fallback: none },
  globalAuthSignin: { name: "global-auth-signin", metavar: "URL", help: "a 401 from --global-auth-url becomes a 302 to this URL (as auth-signin)", defaultText: "none", schema: val.optionalText, fallback: none },
  globalAuthSigninRedirectParam: { name: "global-auth-signin-redirect-param", metavar: "NAME", help: "query parameter of --global-auth-signin carrying the original URL (as auth-signin-redirect-param)", defaultText: "rd", schema: val.optionalText, fallback: none },
  globalAuthResponseHeaders: { name: "global-auth-response-headers", metavar: "NAME[,NAME]", help: "fields of the --global-auth-url 2xx answer copied onto the upstream request (as auth-response-headers)", defaultText: "none", schema: val.optionalText, fallback: none },
  globalAuthRequestRedirect: { name: "global-auth-request-redirect", metavar: "URL", help: "X-Auth-Request-Redirect sent to --global-auth-url (as auth-request-redirect)", defaultText: "the request URI", schema: val.optionalText, fallback: none },
  globalAuthCacheKey: { name: "global-auth-cache-key", metavar: "KEY", help: "cache --global-auth-url answers under this key, per host and path (as auth-cache-key)", defaultText: "none (no caching)", schema: val.optionalText, fallback: none },
  globalAuthCacheDuration: { name: "global-auth-cache-duration", metavar: "[STATUS ...] DURATION[,...]", help: "how long --global-auth-cache-key keeps an answer, per status (as auth-cache-duration)", defaultText: "none: nothing is kept", schema: val.optionalText, fallback: none },
  globalAuthAlwaysSetCookie: { name: "global-auth-always-set-cookie", metavar: null, help: "add the --global-auth-url answer's Set-Cookie to every answer, not only to those with status 200, 201, 204, 206, 301, 302, 303, 304, 307 or 308 (as auth-always-set-cookie)", defaultText: "false", schema: val.bool, fallback: () => false },
  noTlsRedirectLocations: { name: "no-tls-redirect-locations", metavar: "PATH[,PATH]", help: "rule paths (as written) starting with one of these are never redirected to HTTPS", defaultText: "/.well-known/acme-challenge", schema: val.locationList, fallback: () => Object.freeze(["/.well-known/acme-challenge"]) },
  // ingress-nginx merges every Ingress's server-level annotations into the host's one server
  // block, whatever its namespace; `namespace` stops a tenant from setting them on another
  // tenant's host (docs/design.md, "Host-wide policies").
  hostPolicyScope: { name: "host-policy-scope", metavar: "SCOPE", help: "which Ingresses of a host may set its host-wide policies (auth-tls-*, app-root, from-to-www-redirect, server-alias, ssl-ciphers, the server-wide proxy-ssl-* that paths without their own inherit): all (as ingress-nginx) or namespace (only those in the namespace of the host's oldest Ingress; the others' are ignored there with a HostPolicyIgnored diagnostic)", defaultText: "all", schema: val.oneOf(["all", "namespace"]), fallback: () => "all" },
  httpRedirectCode: { name: "http-redirect-code", metavar: "CODE", help: "status of the redirects to HTTPS and between www. and the bare name: 301, 302, 307 or 308", defaultText: "308", schema: val.redirectCode, fallback: () => 308 },
  tlsMinVersion: { name: "tls-min-version", metavar: "V", help: "lowest TLS version accepted: 1.2 or 1.3", defaultText: "1.2", schema: val.oneOf(["1.2", "1.3"]), fallback: () => "1.2" },
  tlsMaxVersion: { name: "tls-max-version", metavar: "V", help: "highest TLS version accepted: 1.2 or 1.3 (not below --tls-min-version)", defaultText: "1.3", schema: val.oneOf(["1.2", "1.3"]), fallback: () => "1.3" },
  tlsEcdhCurve: { name: "tls-ecdh-curve", metavar: "LIST", help: "key-exchange groups offered, names separated by colons (P-256, P-384, P-521, X25519, X25519MLKEM768, or OpenSSL's prime256v1, secp384r1, secp521r1); auto: BoringSSL's default list", defaultText: "auto", schema: val.ecdhCurveList, fallback: () => "auto" },
  tlsCiphers: { name: "tls-ciphers", metavar: "LIST", help: "TLS 1.2 cipher suites: an OpenSSL cipher string (names separated by colons, or rules such as HIGH:!aNULL:!MD5), read as OpenSSL 3 reads it over the suites Portico serves", defaultText: "ECDHE with AES-GCM or CHACHA20-POLY1305", schema: val.cipherList, fallback: () => DEFAULT_TLS_CIPHERS },
  http2: { name: "http2", metavar: null, help: "offer HTTP/2 beside HTTP/1.1: ALPN h2 on the HTTPS port, prior-knowledge h2c on the HTTP port (--http2=false: HTTP/1.1 only)", defaultText: "true", schema: val.bool, fallback: () => true },
  http3: { name: "http3", metavar: null, help: "also serve HTTP/3 (QUIC, UDP) on the HTTPS port number and advertise it with Alt-Svc (experimental in Bun); while a gRPC or client-certificate route splits the HTTPS port by SNI, its hosts are neither advertised nor served over QUIC (421) and every other host is; not served while every host needs node:http2", defaultText: "false", schema: val.bool, fallback: () => false },
  // ingress-nginx's --enable-ssl-passthrough: a TCP front on the HTTPS port reads each
  // ClientHello first (serving/passthrough.ts, docs/design.md "SSL passthrough").
  enableSslPassthrough: { name: "enable-ssl-passthrough", metavar: null, help: "serve the ssl-passthrough annotation: TLS connections whose SNI names such a host go undecrypted to its pods; every other HTTPS connection then passes through a TCP front first (costs: README, \"SSL passthrough\")", defaultText: "false", schema: val.bool, fallback: () => false },
  // ingress-nginx's use-proxy-protocol: a TCP front on both traffic ports reads each
  // connection's PROXY protocol header (serving/front.ts, docs/design.md "PROXY protocol").
  useProxyProtocol: { name: "use-proxy-protocol", metavar: null, help: "every connection on the HTTP and HTTPS ports (and the --gateway-ports ports) opens with a PROXY protocol header (v1 or v2, from a load balancer); its client address and port are used, a connection without one is closed (read at start)", defaultText: "false", schema: val.bool, fallback: () => false },
  // ingress-nginx's proxy-protocol-header-timeout (config.go: 5s).
  proxyProtocolTrusted: { name: "proxy-protocol-trusted", metavar: "CIDR[,CIDR]", help: "with --use-proxy-protocol, the load balancers (connection peers) whose PROXY header's source address is the client address; another peer's header is read and stripped, and the peer stays the client (nginx's set_real_ip_from, ingress-nginx's proxy-real-ip-cidr); IPv4 ranges cover IPv4 peers only, IPv6 ranges IPv6 peers only", defaultText: "0.0.0.0/0 (ingress-nginx's default: every IPv4 peer)", schema: val.cidrList("10.0.0.0/8,fd00::/8"), fallback: () => Object.freeze(["0.0.0.0/0"]) },
  proxyProtocolHeaderTimeoutMs: { name: "proxy-protocol-header-timeout", metavar: "DURATION", help: "with --use-proxy-protocol, longest time a connection's PROXY header may take to arrive; the connection is closed after it", defaultText: "5s", schema: val.duration(1), fallback: () => 5_000 },
  workers: { name: "workers", metavar: "N", help: "data-plane worker processes", defaultText: "the number of CPUs available", schema: val.integer(1, 256), fallback: () => availableParallelism() },
  // README "Migrating from ingress-nginx": the keys act as the flags `portico migrate` names; a flag given wins.
  nginxConfigmap: { name: "nginx-configmap", metavar: "NS/NAME", help: "ingress-nginx's ConfigMap (in --manifests, or in the cluster), watched: each key Portico can honour acts as its flag (a flag given wins), the others are reported; portico migrate reports each key", defaultText: "none", schema: val.nsName, fallback: none },
};

/** Flags only the `explain` subcommand takes. */
export const EXPLAIN_FLAGS = {
  host: { name: "host", metavar: "HOST", help: "Host header of the request to explain", defaultText: "required" },
  path: { name: "path", metavar: "PATH", help: "request path", defaultText: "/" },
  scheme: { name: "scheme", metavar: "SCHEME", help: "http or https", defaultText: "http" },
  client: { name: "client", metavar: "IP", help: "the client address the source-range checks see", defaultText: "an address in no list" },
  method: { name: "method", metavar: "METHOD", help: "request method (Gateway API method matches read it)", defaultText: "GET" },
  contentType: { name: "content-type", metavar: "TYPE", help: "request Content-Type; application/grpc explains a gRPC call (POST /service/method)", defaultText: "none" },
  port: { name: "port", metavar: "N", help: "with --gateway-ports: the Portico port the request comes in on (a Gateway's own port is asked of its rules alone)", defaultText: "the shared ports" },
  gateway: { name: "gateway", metavar: "NS/NAME", help: "with --gateway-ports: ask this Gateway's own port (with --listener-port when it has several)", defaultText: "none" },
  listenerPort: { name: "listener-port", metavar: "N", help: "with --gateway: the Gateway's listener port", defaultText: "its only one" },
  acceptEncoding: { name: "accept-encoding", metavar: "VALUE", help: "request Accept-Encoding: which compression (use-gzip, enable-brotli) a pod's answer gets", defaultText: "none" },
  userAgent: { name: "user-agent", metavar: "VALUE", help: "request User-Agent: gzip-disable and --block-user-agents read it", defaultText: "none" },
} as const;

/** Flags only the `migrate` subcommand takes (it reads --nginx-configmap too, a flag of the server's). */
export const MIGRATE_FLAGS = {
  output: { name: "output", metavar: "FORMAT", help: "text (for people) or json (for scripts)", defaultText: "text" },
  to: { name: "to", metavar: "API", help: "gateway-api: print the Ingresses as Gateway API objects (YAML; --output json: objects and notes) instead of the report", defaultText: "(the report)" },
  gatewayName: { name: "gateway-name", metavar: "NAME", help: "with --to gateway-api: the Gateway's (and GatewayClass's) name", defaultText: "portico" },
  gatewayNamespace: { name: "gateway-namespace", metavar: "NS", help: "with --to gateway-api: the Gateway's namespace", defaultText: "portico" },
  prove: { name: "prove", metavar: null, help: "with --to gateway-api and --manifests: serve the Ingresses and the written objects side by side on loopback, ask both the same sample of requests and list each one whose answer differs (exit 3 when one does)", defaultText: "false" },
} as const;

/** `PORTICO_<FLAG_IN_UPPER_SNAKE>`. */
export function envName(flag: string): string {
  return `PORTICO_${flag.toUpperCase().replace(/-/g, "_")}`;
}
