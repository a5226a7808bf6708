// The one frozen configuration object, produced by config/parse.ts from flags and PORTICO_* env.
import type { HeaderBuffers } from "./header-buffers.ts";
import type { LogEscape } from "../policy/log-format.ts";

export interface NamespacedName {
  readonly namespace: string;
  readonly name: string;
}

/** What the Server field of an answer is (Config.serverHeader). */
export type ServerHeader = "backend" | "none" | "portico";

export interface Config {
  // Sources
  readonly kubeconfig: string | null;
  readonly context: string | null;
  readonly manifests: string | null;
  readonly watchNamespace: string | null;
  // Listeners
  readonly httpPort: number;
  readonly httpsPort: number;
  readonly adminPort: number;
  readonly bind: string;
  /** Peers (CIDRs) that may read /debug/* on the admin port; every peer gets health and metrics. */
  readonly debugAllow: readonly string[];
  // Classes
  readonly ingressClass: string;
  readonly controllerName: string;
  /** GatewayClass spec.controllerName that selects Portico (Gateway API). */
  readonly gatewayControllerName: string;
  /**
   * Ports Portico gives each Gateway of its own (docs/design.md "Gateway API", "Gateways with
   * their own address"); null: every Gateway shares --http-port and --https-port.
   */
  readonly gatewayPorts: PortRange | null;
  readonly watchIngressWithoutClass: boolean;
  /** Ignore every Ingress with spec.defaultBackend (ingress-nginx's --disable-catch-all). */
  readonly disableCatchAll: boolean;
  /** Take the Ingresses ingress-nginx takes: its class defaults and rules (compile/class.ts). */
  readonly ingressNginxCompat: boolean;
  // Defaults
  readonly defaultSslCertificate: NamespacedName | null;
  readonly defaultBackendService: (NamespacedName & { readonly port: number | string }) | null;
  /**
   * Statuses replaced by the default backend's answer on every route without its own
   * custom-http-errors (ingress-nginx's ConfigMap key custom-http-errors), ascending.
   */
  readonly customHttpErrors: readonly number[];
  /** Proxy to ExternalName Services at all (off: they answer 503 with a diagnostic). */
  readonly allowExternalNameServices: boolean;
  // Status
  readonly publishService: NamespacedName | null;
  readonly publishStatusAddress: string | null;
  /** Write Ingress status at all (false: another controller owns it). */
  readonly updateStatus: boolean;
  readonly electionId: string;
  /** Namespace for the Lease: --election-namespace, else POD_NAMESPACE, else the service-account namespace file, else "default". */
  readonly electionNamespace: string | null;
  // Logging
  readonly logLevel: "debug" | "info" | "warn" | "error";
  readonly logFormat: "json" | "text";
  readonly accessLog: "stdout" | "off";
  /** An nginx log_format for the access-log line (ingress-nginx's log-format-upstream), or null: Portico's own fields. */
  readonly accessLogTemplate: string | null;
  /** How the template escapes variable values (nginx's `escape=`). */
  readonly accessLogEscape: LogEscape;
  // Data plane
  /** Bytes; null = unlimited. */
  readonly maxBodySize: number | null;
  /** ingress-nginx's large-client-header-buffers: the longest request or header line and the largest head (config/header-buffers.ts). */
  readonly largeClientHeaderBuffers: HeaderBuffers;
  /** CIDRs whose X-Forwarded-For is believed (and appended to, with computeFullForwardedFor). */
  readonly trustedProxies: readonly string[];
  /**
   * What a trustedProxies peer is believed on: "all" (the client address from X-Forwarded-For,
   * and X-Forwarded-Proto, -Host, -Port: ingress-nginx's use-forwarded-headers) or "address"
   * (the client address only: ingress-nginx's enable-real-ip, nginx.tmpl real_ip_header).
   */
  readonly trustedProxyHeaders: "all" | "address";
  /**
   * X-Forwarded-For from a trusted peer: its own list with the peer appended (true: ingress-nginx's
   * compute-full-forwarded-for, $full_x_forwarded_for) or the client address alone (false:
   * ingress-nginx's default, $remote_addr after the realip module).
   */
  readonly computeFullForwardedFor: boolean;
  /** CIDRs allowed on every Ingress without its own allowlist-source-range (empty: all). */
  readonly allowlistSourceRange: readonly string[];
  /** CIDRs refused on every Ingress without its own denylist-source-range. */
  readonly denylistSourceRange: readonly string[];
  readonly connectTimeoutMs: number;
  readonly responseTimeoutMs: number;
  readonly streamIdleTimeoutMs: number;
  /** Longest wait for the next bytes of a request body (nginx client_body_timeout). */
  readonly clientBodyTimeoutMs: number;
  /** Total deadline for a request header block (nginx client_header_timeout); see config/flags.ts. */
  readonly clientHeaderTimeoutMs: number;
  /** Bytes/s a request body must average once clientBodyTimeoutMs of waiting is used up; null = no minimum. */
  readonly clientBodyMinRate: number | null;
  /** Bytes per second of each response body after limitRateAfter bytes (nginx's limit_rate); 0 = unlimited. */
  readonly limitRate: number;
  /** Bytes of each response body sent before limitRate applies (nginx's limit_rate_after). */
  readonly limitRateAfter: number;
  /**
   * Largest request body read whole before the upstream is contacted (ingress-nginx's
   * proxy-request-buffering, on by default there); 0 = every body is streamed. Routes override
   * it (client-body-buffer-size, proxy-request-buffering). docs/design.md, "Request buffering".
   */
  readonly requestBufferSize: number;
  /** Bytes all buffered request bodies of this process may hold together; a body that does not fit is streamed. */
  readonly requestBufferBudget: number;
  /**
   * ingress-nginx's proxy-buffering for routes without the annotation: a streamed answer is held
   * in buffers of proxyBufferSize bytes (docs/design.md, "Response buffering").
   */
  readonly proxyBuffering: boolean;
  readonly proxyBufferSize: number;
  /** Largest upstream response header block in bytes; larger gets 502. */
  readonly maxResponseHeaderSize: number;
  /** Forward request header names containing "_" (nginx underscores_in_headers); dropped when false. */
  readonly enableUnderscoresInHeaders: boolean;
  readonly shutdownDelayMs: number;
  readonly shutdownGracePeriodMs: number;
  /** Status of a request refused by `limit-rps`/`limit-rpm` (ingress-nginx's limit-req-status-code). */
  readonly limitReqStatusCode: number;
  /** Status of a request refused by `limit-connections` (ingress-nginx's limit-conn-status-code). */
  readonly limitConnStatusCode: number;
  /**
   * The Server field of every answer: `backend`, the pod's passed on and none of Portico's own;
   * `none` (ingress-nginx's server-tokens false, its default); `portico`, Portico's own name and
   * version in place of the pod's (server-tokens true, where nginx names itself).
   */
  readonly serverHeader: ServerHeader;
  /**
   * Response compression as ingress-nginx's ConfigMap sets it (use-gzip, gzip-level,
   * gzip-min-length, gzip-types, gzip-disable; nginx.tmpl's gzip block): docs/design.md
   * "Response compression". Off by default, as in ingress-nginx.
   */
  readonly gzip: boolean;
  /** gzip_comp_level, 1-9. */
  readonly gzipLevel: number;
  /** gzip_min_length: an answer whose Content-Length is below this is sent as it is. */
  readonly gzipMinLength: number;
  /** gzip_types: media types (lowercase, no parameters) compressed; `*` is any; text/html always. */
  readonly gzipTypes: readonly string[];
  /** gzip_disable: `msie6` (nginx's built-in test) or a case-insensitive regular expression on User-Agent; null: none. */
  readonly gzipDisable: string | null;
  /** ingress-nginx's enable-brotli, brotli-level, brotli-min-length, brotli-types (ngx_brotli; preferred to gzip). */
  readonly brotli: boolean;
  readonly brotliLevel: number;
  readonly brotliMinLength: number;
  readonly brotliTypes: readonly string[];
  // TLS and redirects
  readonly hsts: boolean;
  readonly hstsMaxAge: number;
  /** includeSubDomains and preload in Strict-Transport-Security (ingress-nginx's hsts-include-subdomains, hsts-preload). */
  readonly hstsIncludeSubdomains: boolean;
  readonly hstsPreload: boolean;
  /**
   * The HTTPS redirect on Ingresses that do not set ssl-redirect / force-ssl-redirect themselves
   * (ingress-nginx's ConfigMap keys of the same names).
   */
  readonly sslRedirect: boolean;
  readonly forceSslRedirect: boolean;
  /**
   * ingress-nginx's ConfigMap keys use-port-in-redirects and preserve-trailing-slash: the
   * value of the annotation of the same name on Ingresses that do not set it (or set a value
   * that does not parse), as ingress-nginx's annotation parsers fall back to the ConfigMap.
   */
  readonly usePortInRedirects: boolean;
  readonly preserveTrailingSlash: boolean;
  /**
   * ingress-nginx's ConfigMap key relative-redirects (nginx `absolute_redirect off` in the
   * http block): every redirect URL starting with `/` is sent as written, whatever the
   * Ingress's own relative-redirects says (that annotation can only turn it on).
   */
  readonly relativeRedirects: boolean;
  /** ingress-nginx's ConfigMap proxy-redirect-from/-to, proxy-cookie-domain/-path: "off", or the value as nginx reads it. */
  readonly proxyRedirectFrom: string;
  readonly proxyRedirectTo: string;
  readonly proxyCookieDomain: string;
  readonly proxyCookiePath: string;
  /**
   * ingress-nginx's ConfigMap key proxy-ssl-location-only: false (its default) lets the host's
   * first Ingress with a proxy-ssl-secret holding ca.crt cover the host's other paths
   * (docs/design.md, "TLS to the pods").
   */
  readonly proxySslLocationOnly: boolean;
  /**
   * ingress-nginx's ConfigMap key no-auth-locations: a route whose rule path, as written,
   * starts with one of these runs no basic or external authentication (nginx.tmpl leaves
   * auth_basic and auth_request out of such a location; template.go isLocationInLocationList).
   */
  readonly noAuthLocations: readonly string[];
  /**
   * ingress-nginx's ConfigMap key global-allowed-response-headers: the names the custom-headers
   * annotation may set, compared as written (customheaders/main.go slices.Contains).
   */
  readonly globalAllowedResponseHeaders: readonly string[];
  /** ingress-nginx's add-headers: the ConfigMap of fields set on every answer (compile/global-headers.ts). */
  readonly addHeaders: NamespacedName | null;
  /** ingress-nginx's proxy-set-headers: the ConfigMap of fields set on every request to a pod. */
  readonly proxySetHeaders: NamespacedName | null;
  /** ingress-nginx's block-cidrs: clients refused (403) on every request (proxy/pipeline/block.ts). */
  readonly blockCidrs: readonly string[];
  /** ingress-nginx's block-user-agents: exact values, or `~`/`~*` regexes (regex/block-pattern.ts). */
  readonly blockUserAgents: readonly string[];
  /** ingress-nginx's block-referers, written as blockUserAgents. */
  readonly blockReferers: readonly string[];
  /**
   * ingress-nginx's ConfigMap keys global-auth-* (configmap.go, nginx.tmpl's auth location for a
   * location without its own auth-url): the text as written, null when unset. The compiler reads
   * them as the auth-url annotations of the same names and adds the policy to every route whose
   * Ingress sets no auth-url and not enable-global-auth: "false" (compile/global-auth.ts).
   */
  readonly globalAuthUrl: string | null;
  readonly globalAuthMethod: string | null;
  readonly globalAuthSignin: string | null;
  readonly globalAuthSigninRedirectParam: string | null;
  readonly globalAuthResponseHeaders: string | null;
  readonly globalAuthRequestRedirect: string | null;
  readonly globalAuthCacheKey: string | null;
  readonly globalAuthCacheDuration: string | null;
  readonly globalAuthAlwaysSetCookie: boolean;
  /**
   * ingress-nginx's ConfigMap key no-tls-redirect-locations: a path whose rule path, as
   * written, starts with one of these is never redirected to HTTPS (template.go
   * isLocationInLocationList, lua_ingress.lua force_no_ssl_redirect).
   */
  readonly noTlsRedirectLocations: readonly string[];
  /**
   * Which Ingresses of a host may set its host-wide policies (client certificates, app-root,
   * from-to-www-redirect, server-alias): `all`, as ingress-nginx merges them into one server
   * block, or `namespace`, only those in the namespace of the host's oldest Ingress
   * (compile/host-scope.ts).
   */
  readonly hostPolicyScope: "all" | "namespace";
  /** Status of the redirects to HTTPS and from the www name (ingress-nginx's `http-redirect-code`). */
  readonly httpRedirectCode: 301 | 302 | 307 | 308;
  readonly tlsMinVersion: "1.2" | "1.3";
  readonly tlsMaxVersion: "1.2" | "1.3";
  /** Colon-separated key-exchange group names, or "auto" (BoringSSL's defaults). */
  readonly tlsEcdhCurve: string;
  readonly tlsCiphers: string;
  /** HTTP/2 on both ports (ALPN h2 on HTTPS, prior-knowledge h2c on HTTP); off: HTTP/1.1 only. */
  readonly http2: boolean;
  /** HTTP/3 (QUIC) on the HTTPS port number, advertised with Alt-Svc; off by default (experimental in Bun). Only while Bun.serve alone serves the port, not while it is split or on node:http2 (serving/https.ts). */
  readonly http3: boolean;
  /** ingress-nginx's --enable-ssl-passthrough: a TCP front reads the ClientHello before TLS (serving/passthrough.ts). */
  readonly enableSslPassthrough: boolean;
  /** ingress-nginx's use-proxy-protocol: a PROXY header opens every connection on both traffic ports (serving/front.ts). */
  readonly useProxyProtocol: boolean;
  /** How long that header may take (ingress-nginx's proxy-protocol-header-timeout). */
  readonly proxyProtocolHeaderTimeoutMs: number;
  /** --proxy-protocol-trusted: peers whose PROXY header's source is believed (docs/design.md "PROXY protocol"). */
  readonly proxyProtocolTrusted: readonly string[];
  // Performance
  readonly workers: number;
  // ingress-nginx
  /** ingress-nginx's ConfigMap, read and watched: its keys act as the flags they map to (runtime/nginx-settings.ts). */
  readonly nginxConfigmap: NamespacedName | null;
}

/** An inclusive range of TCP ports. */
export interface PortRange {
  readonly from: number;
  readonly to: number;
}
