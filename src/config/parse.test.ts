import { describe, expect, test } from "bun:test";
import { availableParallelism } from "node:os";
import { DEFAULT_BROTLI_TYPES, DEFAULT_GZIP_TYPES, DEFAULT_TLS_CIPHERS, FLAGS, envName } from "./flags.ts";
import { isLiveField } from "./live.ts";
import { parseArgs, type ParseOutcome } from "./parse.ts";
import { helpText } from "../runtime/help.ts";
import type { Config } from "./types.ts";

function run(argv: string[], env: Record<string, string | undefined> = {}): Config {
  const o = parseArgs(argv, env);
  if (o.type !== "run") throw new Error(`expected run, got ${JSON.stringify(o)}`);
  return o.config;
}

function err(argv: string[], env: Record<string, string | undefined> = {}): string {
  const o: ParseOutcome = parseArgs(argv, env);
  if (o.type !== "error") throw new Error(`expected error, got ${o.type}`);
  expect(o.message).not.toContain("\n");
  return o.message;
}

describe("defaults", () => {
  test("no flags gives the documented defaults, frozen", () => {
    const c = run([]);
    expect(c).toEqual({
      kubeconfig: null,
      context: null,
      manifests: null,
      watchNamespace: null,
      httpPort: 8080,
      httpsPort: 8443,
      adminPort: 10254,
      bind: "0.0.0.0",
      debugAllow: ["127.0.0.0/8", "::1/128"],
      ingressClass: "portico",
      controllerName: "portico.dev/ingress-controller",
      gatewayControllerName: "portico.dev/gateway-controller",
      gatewayPorts: null,
      watchIngressWithoutClass: false,
      disableCatchAll: false,
      ingressNginxCompat: false,
      defaultSslCertificate: null,
      defaultBackendService: null,
      customHttpErrors: [],
      publishService: null,
      publishStatusAddress: null,
      updateStatus: true,
      electionId: "portico-leader",
      electionNamespace: null,
      logLevel: "info",
      logFormat: "json",
      accessLog: "stdout",
      accessLogTemplate: null,
      accessLogEscape: "default",
      maxBodySize: null,
      largeClientHeaderBuffers: { number: 4, size: 8192 },
      trustedProxies: [],
      trustedProxyHeaders: "all",
      computeFullForwardedFor: true,
      allowlistSourceRange: [],
      denylistSourceRange: [],
      connectTimeoutMs: 5000,
      responseTimeoutMs: 60000,
      streamIdleTimeoutMs: 300000,
      clientBodyTimeoutMs: 60000,
      clientHeaderTimeoutMs: 60000,
      clientBodyMinRate: 500,
      limitRate: 0,
      limitRateAfter: 0,
      requestBufferSize: 1048576,
      requestBufferBudget: 67108864,
      proxyBuffering: false,
      proxyBufferSize: 4096,
      maxResponseHeaderSize: 65536,
      enableUnderscoresInHeaders: false,
      shutdownDelayMs: 5000,
      shutdownGracePeriodMs: 30000,
      limitReqStatusCode: 503,
      limitConnStatusCode: 503,
      serverHeader: "backend",
      gzip: false,
      gzipLevel: 1,
      gzipMinLength: 256,
      gzipTypes: DEFAULT_GZIP_TYPES,
      gzipDisable: null,
      brotli: false,
      brotliLevel: 4,
      brotliMinLength: 20,
      brotliTypes: DEFAULT_BROTLI_TYPES,
      allowExternalNameServices: false,
      hsts: true,
      hstsMaxAge: 31536000,
      hstsIncludeSubdomains: false,
      hstsPreload: false,
      sslRedirect: true,
      forceSslRedirect: false,
      usePortInRedirects: false,
      preserveTrailingSlash: false,
      relativeRedirects: false,
      proxyRedirectFrom: "off",
      proxyRedirectTo: "off",
      proxyCookieDomain: "off",
      proxyCookiePath: "off",
      proxySslLocationOnly: false,
      noTlsRedirectLocations: ["/.well-known/acme-challenge"],
      noAuthLocations: ["/.well-known/acme-challenge"],
      globalAllowedResponseHeaders: [],
      addHeaders: null,
      proxySetHeaders: null,
      blockCidrs: [],
      blockUserAgents: [],
      blockReferers: [],
      globalAuthUrl: null, globalAuthMethod: null, globalAuthSignin: null, globalAuthSigninRedirectParam: null, globalAuthResponseHeaders: null, globalAuthRequestRedirect: null, globalAuthCacheKey: null, globalAuthCacheDuration: null, globalAuthAlwaysSetCookie: false,
      hostPolicyScope: "all",
      httpRedirectCode: 308,
      nginxConfigmap: null,
      tlsMinVersion: "1.2",
      tlsMaxVersion: "1.3",
      tlsEcdhCurve: "auto",
      tlsCiphers: DEFAULT_TLS_CIPHERS,
      http2: true, http3: false, enableSslPassthrough: false, useProxyProtocol: false, proxyProtocolHeaderTimeoutMs: 5_000, proxyProtocolTrusted: ["0.0.0.0/0"],
      workers: availableParallelism(),
    });
    expect(Object.isFrozen(c)).toBe(true);
    expect(Object.isFrozen(c.trustedProxies)).toBe(true);
    expect(DEFAULT_TLS_CIPHERS.split(":").every((s) => s.startsWith("ECDHE-") && /GCM|CHACHA20/.test(s))).toBe(true);
  });
});

describe("values", () => {
  test("every form: --flag value, --flag=value, bare switch, --switch=false", () => {
    const c = run([
      "--http-port", "81", "--https-port=444", "--watch-ingress-without-class", "--hsts=false",
      "--kubeconfig", "/k", "--context", "ctx", "--watch-namespace", "team-a",
      "--bind", "::1", "--ingress-class", "edge", "--controller-name", "example.com/edge",
      "--default-ssl-certificate", "infra/wildcard", "--default-backend-service", "infra/fallback:http",
      "--publish-service", "infra/lb", "--publish-status-address", "10.0.0.1, lb.example.com",
      "--election-id", "edge-leader", "--election-namespace", "infra", "--log-level", "debug", "--log-format", "text",
      "--access-log", "off", "--max-body-size", "10m", "--trusted-proxies", "10.0.0.0/8,FD00::/8,192.168.1.1",
      "--connect-timeout", "500ms", "--response-timeout", "2m", "--stream-idle-timeout", "1h", "--shutdown-delay", "0",
      "--shutdown-grace-period", "45", "--hsts-max-age", "60", "--tls-min-version", "1.3", "--host-policy-scope", "namespace",
      "--tls-ciphers", "ECDHE-RSA-AES128-GCM-SHA256", "--workers", "3", "--admin-port", "9000",
      "--allow-external-name-services", "--allowlist-source-range", "10.0.0.0/8, 2001:DB8::/32", "--denylist-source-range", "10.9.9.9",
      "--limit-req-status-code", "429", "--limit-conn-status-code", "503", "--http2=false",
      "--custom-http-errors", " 503,404 ,404",
      "--http-redirect-code", "301",
    ]);
    expect(c).toMatchObject({
      httpPort: 81, httpsPort: 444, adminPort: 9000, watchIngressWithoutClass: true, hsts: false,
      kubeconfig: "/k", context: "ctx", manifests: null, watchNamespace: "team-a", bind: "::1",
      ingressClass: "edge", controllerName: "example.com/edge",
      defaultSslCertificate: { namespace: "infra", name: "wildcard" },
      defaultBackendService: { namespace: "infra", name: "fallback", port: "http" },
      publishService: { namespace: "infra", name: "lb" }, publishStatusAddress: "10.0.0.1,lb.example.com",
      electionId: "edge-leader", electionNamespace: "infra", logLevel: "debug", logFormat: "text", accessLog: "off",
      maxBodySize: 10 * 1024 * 1024, trustedProxies: ["10.0.0.0/8", "fd00::/8", "192.168.1.1/32"],
      allowlistSourceRange: ["10.0.0.0/8", "2001:db8::/32"], denylistSourceRange: ["10.9.9.9/32"],
      connectTimeoutMs: 500, responseTimeoutMs: 120_000, streamIdleTimeoutMs: 3_600_000, shutdownDelayMs: 0,
      shutdownGracePeriodMs: 45_000, hstsMaxAge: 60, tlsMinVersion: "1.3", tlsCiphers: "ECDHE-RSA-AES128-GCM-SHA256", workers: 3,
      allowExternalNameServices: true, limitReqStatusCode: 429, limitConnStatusCode: 503, customHttpErrors: [404, 503], http2: false, httpRedirectCode: 301, hostPolicyScope: "namespace",
    });
  });

  test("body timing, response header size and underscores", () => {
    const c = run(["--client-header-timeout", "5s", "--client-body-timeout", "20s", "--client-body-min-rate", "1k", "--max-response-header-size", "16k", "--enable-underscores-in-headers"]);
    expect(c).toMatchObject({ clientHeaderTimeoutMs: 5_000, clientBodyTimeoutMs: 20_000, clientBodyMinRate: 1024, maxResponseHeaderSize: 16_384, enableUnderscoresInHeaders: true });
    expect(run(["--client-body-min-rate", "0"]).clientBodyMinRate).toBeNull();
    // A buffer size of 0 is none (every body streamed), not unlimited.
    expect(run(["--request-buffer-size", "0", "--request-buffer-budget", "8m"])).toMatchObject({ requestBufferSize: 0, requestBufferBudget: 8 * 1024 * 1024 });
  });

  test("response buffering: --proxy-buffering and --proxy-buffer-size, both live (the ConfigMap's proxy-buffering, proxy-buffer-size)", () => {
    expect(run([])).toMatchObject({ proxyBuffering: false, proxyBufferSize: 4096 });
    expect(run(["--proxy-buffering", "--proxy-buffer-size", "16k"])).toMatchObject({ proxyBuffering: true, proxyBufferSize: 16_384 });
    expect(isLiveField("proxyBuffering") && isLiveField("proxyBufferSize")).toBe(true);
  });

  test("--manifests (the other source; it excludes --kubeconfig and --context)", () => {
    expect(run(["--manifests", "./m"]).manifests).toBe("./m");
  });

  test("a numeric backend port is a number; max-body-size 0 is unlimited", () => {
    const c = run(["--default-backend-service=ns/svc:8080", "--max-body-size", "0"]);
    expect(c.defaultBackendService).toEqual({ namespace: "ns", name: "svc", port: 8080 });
    expect(c.maxBodySize).toBeNull();
  });

  test("an IPv4-mapped IPv6 CIDR is kept as written (the matcher applies it to IPv4 peers)", () => {
    expect(run(["--trusted-proxies", "::ffff:10.0.0.0/104"]).trustedProxies).toEqual(["::ffff:10.0.0.0/104"]);
  });

  test("--debug-allow: a list, or empty (--debug-allow=) for nobody", () => {
    expect(run(["--debug-allow", "10.0.0.0/8, ::1"]).debugAllow).toEqual(["10.0.0.0/8", "::1/128"]);
    expect(run(["--debug-allow="]).debugAllow).toEqual([]);
  });

  test("--ingress-nginx-compat sets ingress-nginx's class and controller unless they are given", () => {
    expect(run(["--ingress-nginx-compat"])).toMatchObject({ ingressNginxCompat: true, ingressClass: "nginx", controllerName: "k8s.io/ingress-nginx" });
    expect(run([], { PORTICO_INGRESS_NGINX_COMPAT: "true" })).toMatchObject({ ingressClass: "nginx", controllerName: "k8s.io/ingress-nginx" });
    // An install whose ingress-nginx ran with --ingress-class nginx-public keeps that name.
    expect(run(["--ingress-nginx-compat", "--ingress-class", "nginx-public"])).toMatchObject({ ingressClass: "nginx-public", controllerName: "k8s.io/ingress-nginx" });
    expect(run(["--ingress-nginx-compat"], { PORTICO_CONTROLLER_NAME: "example.com/x" }).controllerName).toBe("example.com/x");
    expect(run(["--ingress-nginx-compat=false"])).toMatchObject({ ingressNginxCompat: false, ingressClass: "portico", controllerName: "portico.dev/ingress-controller" });
  });

  test("--controller-class is ingress-nginx's name for --controller-name", () => {
    expect(run(["--controller-class", "k8s.io/ingress-nginx"]).controllerName).toBe("k8s.io/ingress-nginx");
    expect(err(["--controller-class", "nope"])).toContain("--controller-class");
  });

  test("--update-status=false turns status writing off", () => {
    expect(run([]).updateStatus).toBe(true);
    expect(run(["--update-status=false"]).updateStatus).toBe(false);
  });

  test("the last of a repeated flag wins", () => {
    expect(run(["--http-port", "81", "--http-port", "82"]).httpPort).toBe(82);
  });
});

describe("environment twins", () => {
  test("every flag reads PORTICO_<FLAG>", () => {
    expect(envName("watch-ingress-without-class")).toBe("PORTICO_WATCH_INGRESS_WITHOUT_CLASS");
    const c = run([], {
      PORTICO_HTTP_PORT: "1234",
      PORTICO_WATCH_INGRESS_WITHOUT_CLASS: "true",
      PORTICO_HSTS: "false",
      PORTICO_CONNECT_TIMEOUT: "2s",
      PORTICO_TRUSTED_PROXIES: "10.1.0.0/16",
      PORTICO_MANIFESTS: "/etc/portico",
    });
    expect(c).toMatchObject({ httpPort: 1234, watchIngressWithoutClass: true, hsts: false, connectTimeoutMs: 2000, trustedProxies: ["10.1.0.0/16"], manifests: "/etc/portico" });
  });

  test("a flag wins over its variable; an empty variable is unset", () => {
    const c = run(["--http-port", "81"], { PORTICO_HTTP_PORT: "1234", PORTICO_LOG_LEVEL: "" });
    expect(c.httpPort).toBe(81);
    expect(c.logLevel).toBe("info");
  });

  test("a bad variable names the variable and its flag", () => {
    expect(err([], { PORTICO_HTTPS_PORT: "abc" })).toBe('PORTICO_HTTPS_PORT (--https-port): expected an integer 1-65535, got "abc"');
    // ...but a valid flag overrides a bad variable: the variable is never read.
    expect(run(["--https-port", "9443"], { PORTICO_HTTPS_PORT: "abc" }).httpsPort).toBe(9443);
  });
});

test("--tls-ciphers: ingress-nginx's default list (config.go sslCiphers) reads as Portico's default, its DHE suites left out", () => {
  const nginxDefault = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:DHE-RSA-AES256-GCM-SHA384:DHE-RSA-AES128-GCM-SHA256";
  const out = parseArgs(["--tls-ciphers", nginxDefault], {});
  expect(out.type === "run" ? out.config.tlsCiphers : out.type).toBe(DEFAULT_TLS_CIPHERS);
});

test("--tls-ciphers: an OpenSSL cipher string reads as the suites OpenSSL 3 selects, in its order", () => {
  // `openssl ciphers 'HIGH:!aNULL:!MD5'` (OpenSSL 3.0), restricted to the suites Portico serves.
  const out = parseArgs(["--tls-ciphers", "HIGH:!aNULL:!MD5"], {});
  expect(out.type === "run" ? out.config.tlsCiphers.split(":") : out.type).toEqual([
    "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305",
    "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES128-SHA256", "ECDHE-RSA-AES128-SHA256",
    "ECDHE-ECDSA-AES256-SHA", "ECDHE-RSA-AES256-SHA", "ECDHE-ECDSA-AES128-SHA", "ECDHE-RSA-AES128-SHA",
    "AES256-GCM-SHA384", "AES128-GCM-SHA256", "AES256-SHA", "AES128-SHA",
  ]);
  // A word OpenSSL 3 lacks selects nothing and is skipped, as OpenSSL skips it.
  const named = parseArgs(["--tls-ciphers", "ECDHE-RSA-AES128-GCM-SHA256:BOGUS"], {});
  expect(named.type === "run" ? named.config.tlsCiphers : named.type).toBe("ECDHE-RSA-AES128-GCM-SHA256");
});

describe("errors name the flag", () => {
  const cases: [string[], string][] = [
    [["--http-port", "x"], '--http-port: expected an integer 1-65535, got "x"'],
    [["--http-port", "0"], "--http-port: expected an integer 1-65535"],
    [["--https-port=70000"], "--https-port: expected an integer 1-65535"],
    [["--admin-port", "-1"], '--admin-port: expected an integer 1-65535, got "-1"'],
    [["--bind", "not an ip"], "--bind: expected an IP address of this host"],
    [["--bind", "notanip"], '--bind: expected an IP address of this host (0.0.0.0, ::, 127.0.0.1, ...) or localhost, got "notanip"'],
    [["--debug-allow", "127.0.0.1/8,localhost"], '--debug-allow: expected IPv4/IPv6 CIDRs separated by commas (e.g. 127.0.0.0/8,::1); "localhost" is not'],
    [["--ingress-class", "Bad_Class"], "--ingress-class: expected a lowercase RFC 1123 name"],
    [["--controller-name", "no-slash"], "--controller-name: expected a domain-prefixed path"],
    [["--gateway-controller-name", "no-slash"], "--gateway-controller-name: expected a domain-prefixed path"],
    [["--gateway-ports", "20000-10000"], "--gateway-ports: expected a port range FROM-TO"],
    [["--gateway-ports", "10000-20000"], "--gateway-ports: expected a port range FROM-TO"],
    [["--gateway-ports", "10080-10179", "--http-port", "10100", "--publish-service", "a/b"], "--gateway-ports: 10080-10179 includes --http-port 10100"],
    [["--gateway-ports", "10080-10179"], "--gateway-ports: needs --publish-service"],
    [["--watch-ingress-without-class=maybe"], "--watch-ingress-without-class: expected true or false"],
    [["--disable-catch-all=yes"], "--disable-catch-all: expected true or false"],
    [["--watch-namespace", "a.b"], "--watch-namespace: expected a lowercase RFC 1123 label"],
    [["--default-ssl-certificate", "justname"], "--default-ssl-certificate: expected NAMESPACE/NAME"],
    [["--allow-external-name-services=yes please"], "--allow-external-name-services: expected true or false"],
    [["--ingress-nginx-compat=nginx"], "--ingress-nginx-compat: expected true or false"],
    [["--update-status=never"], "--update-status: expected true or false"],
    // The message names true and false only, so nothing else is taken for them.
    [["--update-status=1"], "--update-status: expected true or false"],
    [["--update-status=yes"], "--update-status: expected true or false"],
    [["--hsts=off"], "--hsts: expected true or false"],
    [["--ssl-redirect=0"], "--ssl-redirect: expected true or false"],
    [["--default-backend-service", "ns/svc"], "--default-backend-service: expected NAMESPACE/NAME:PORT"],
    [["--default-backend-service", "ns/svc:0"], "--default-backend-service: expected NAMESPACE/NAME:PORT"],
    [["--custom-http-errors", "200"], "--custom-http-errors: expected status codes 300-599"],
    [["--custom-http-errors", "5O3"], "--custom-http-errors: expected status codes 300-599"],
    [["--publish-service", "a/b/c"], "--publish-service: expected NAMESPACE/NAME"],
    [["--publish-status-address", "1.2.3.4,,"], "--publish-status-address: expected IP addresses or host names"],
    [["--election-id", "UPPER"], "--election-id: expected a lowercase RFC 1123 name"],
    [["--election-namespace", "x_y"], "--election-namespace: expected a lowercase RFC 1123 label"],
    [["--log-level", "trace"], '--log-level: expected debug, info, warn or error, got "trace"'],
    [["--log-format", "xml"], '--log-format: expected json or text, got "xml"'],
    [["--access-log-template", "it's $status"], "--access-log-template: expected an nginx log format: an unescaped ' at offset 2"],
    [["--limit-rate", "fast"], "--limit-rate: expected a size"],
    [["--limit-rate-after", "-1"], "--limit-rate-after: expected a size"],
    [["--access-log-escape", "html"], '--access-log-escape: expected default, json or none, got "html"'],
    [["--access-log", "stderr"], '--access-log: expected stdout or off, got "stderr"'],
    [["--max-body-size", "10t"], "--max-body-size: expected a size"],
    [["--large-client-header-buffers", "8k"], '--large-client-header-buffers: expected a number and a size like "4 8k"'],
    [["--large-client-header-buffers", "4 32k"], '--large-client-header-buffers: expected a number and a size like "4 8k"'],
    [["--trusted-proxies", "10.0.0.0/33"], "--trusted-proxies: expected IPv4/IPv6 CIDRs"],
    [["--trusted-proxies", "example.com"], "--trusted-proxies: expected IPv4/IPv6 CIDRs"],
    [["--trusted-proxies", "10.0.0.0/8,fe80::1%eth0/64"], '--trusted-proxies: expected IPv4/IPv6 CIDRs separated by commas (e.g. 10.0.0.0/8,fd00::/8); "fe80::1%eth0/64" has a zone index'],
    [["--allowlist-source-range", "10.0.0.0/8,bogus"], '--allowlist-source-range: expected IPv4/IPv6 CIDRs separated by commas (e.g. 10.0.0.0/8,2001:db8::/32); "bogus" is not'],
    [["--allowlist-source-range", "::ffff:10.0.0.0/104"], "--allowlist-source-range: ::ffff:10.0.0.0/104 is an IPv4-mapped IPv6 range"],
    [["--denylist-source-range", "10.0.0.0/8,"], "--denylist-source-range: expected IPv4/IPv6 CIDRs separated by commas (e.g. 192.0.2.0/24); an empty entry"],
    [["--connect-timeout", "0"], "--connect-timeout: expected a duration"],
    [["--response-timeout", "5d"], "--response-timeout: expected a duration"],
    [["--stream-idle-timeout", "-1s"], "--stream-idle-timeout: expected a duration"],
    [["--client-header-timeout", "0"], "--client-header-timeout: expected a duration"],
    [["--client-body-timeout", "0"], "--client-body-timeout: expected a duration"],
    [["--client-body-min-rate", "fast"], "--client-body-min-rate: expected a rate in bytes per second"],
    [["--request-buffer-size", "1t"], "--request-buffer-size: expected a size"],
    [["--request-buffer-budget", "-1"], "--request-buffer-budget: expected a size"],
    [["--max-response-header-size", "100"], "--max-response-header-size: expected a size from 1k to 16m"],
    [["--enable-underscores-in-headers=perhaps"], "--enable-underscores-in-headers: expected true or false"],
    [["--compute-full-forwarded-for=perhaps"], "--compute-full-forwarded-for: expected true or false"],
    [["--shutdown-delay", "soon"], "--shutdown-delay: expected a duration"],
    [["--shutdown-grace-period", "1000h"], "--shutdown-grace-period: expected a duration"],
    // Past 2^31-1 ms a timer fires at once: the message names the limit.
    [["--stream-idle-timeout", "597h"], "--stream-idle-timeout: expected a duration like 500ms, 5s, 2m or 1h (above zero, at most 596h)"],
    [["--gzip=maybe"], "--gzip: expected true or false"],
    [["--gzip-level", "10"], "--gzip-level: expected an integer 1-9"],
    [["--gzip-min-length", "-1"], "--gzip-min-length: expected an integer"],
    [["--gzip-types", "text"], "--gzip-types: expected media types"],
    [["--gzip-disable", "(a"], "--gzip-disable: expected a regular expression Portico can run"],
    [["--brotli=maybe"], "--brotli: expected true or false"],
    [["--brotli-level", "12"], "--brotli-level: expected an integer 0-11"],
    [["--brotli-min-length", "x"], "--brotli-min-length: expected an integer"],
    [["--brotli-types", "text"], "--brotli-types: expected media types"],
    [["--hsts=sometimes"], "--hsts: expected true or false"],
    [["--hsts-max-age", "1.5"], "--hsts-max-age: expected an integer"],
    [["--hsts-include-subdomains=often"], "--hsts-include-subdomains: expected true or false"],
    [["--hsts-preload=1x"], "--hsts-preload: expected true or false"],
    [["--ssl-redirect=no-way"], "--ssl-redirect: expected true or false"],
    [["--force-ssl-redirect=yes please"], "--force-ssl-redirect: expected true or false"],
    [["--host-policy-scope", "tenant"], '--host-policy-scope: expected all or namespace, got "tenant"'],
    [["--nginx-configmap", "Bad/Name"], "--nginx-configmap: expected NAMESPACE/NAME"],
    [["--limit-req-status-code", "200"], "--limit-req-status-code: expected an integer 400-599"],
    [["--limit-conn-status-code", "5O3"], "--limit-conn-status-code: expected an integer 400-599"],
    [["--http-redirect-code", "303"], "--http-redirect-code: expected 301, 302, 307 or 308"],
    [["--trusted-proxy-headers", "host"], "--trusted-proxy-headers: expected all or address"],
    [["--server-header", "nginx"], '--server-header: expected backend, none or portico, got "nginx"'],
    [["--tls-min-version", "1.1"], '--tls-min-version: expected 1.2 or 1.3, got "1.1"'],
    [["--proxy-redirect-from", "a b"], "--proxy-redirect-from: expected off or default or one word"],
    [["--proxy-redirect-to", "$host"], "--proxy-redirect-to: nginx variables"],
    [["--proxy-cookie-domain", "localhost"], "--proxy-cookie-domain: expected off or two words"],
    [["--proxy-cookie-path", "~(?<=a) /"], "--proxy-cookie-path: the regular expression"],
    [["--tls-ciphers", "DHE-RSA-AES256-GCM-SHA384"], "--tls-ciphers: no suite Portico can serve"],
    [["--tls-max-version", "1.1"], '--tls-max-version: expected 1.2 or 1.3, got "1.1"'],
    [["--tls-ecdh-curve", "P-256:bogus"], '--tls-ecdh-curve: unknown key-exchange group "bogus"'],
    // OpenSSL's "invalid command" (ssl_ciph.c ssl_cipher_process_rulestr): the whole string is refused.
    [["--tls-ciphers", "HIGH:!aNULL:%MD5"], '--tls-ciphers: invalid character "%" at 13'],
    [["--tls-ciphers", "HIGH:@FAST"], "--tls-ciphers: unknown command @FAST"],
    [["--tls-ciphers", "TLS_AES_128_GCM_SHA256"], "--tls-ciphers: TLS 1.3 suite TLS_AES_128_GCM_SHA256 cannot be chosen"],
    [["--http2=h2c"], "--http2: expected true or false"],
    [["--use-port-in-redirects=yes"], "--use-port-in-redirects: expected true or false"],
    [["--preserve-trailing-slash=yes"], "--preserve-trailing-slash: expected true or false"],
    [["--relative-redirects=yes"], "--relative-redirects: expected true or false"],
    [["--proxy-ssl-location-only=yes"], "--proxy-ssl-location-only: expected true or false"],
    [["--proxy-buffering=on"], "--proxy-buffering: expected true or false"],
    [["--proxy-buffer-size", "0"], "--proxy-buffer-size: expected a size of at least 1 byte"],
    [["--no-tls-redirect-locations", "/a b"], "--no-tls-redirect-locations: expected path prefixes separated by commas"],
    [["--no-auth-locations", "/a b"], "--no-auth-locations: expected path prefixes separated by commas"],
    [["--global-allowed-response-headers", "X-A,X B"], "--global-allowed-response-headers: expected header names"],
    [["--block-cidrs", "10.0.0.0/33"], "--block-cidrs: "],
    [["--add-headers", "no-slash"], "--add-headers: "],
    [["--proxy-set-headers", "a/b/c"], "--proxy-set-headers: "],
    [["--block-user-agents", "~*(a"], "--block-user-agents: "],
    [["--block-referers", "~x("], "--block-referers: "],
    // The global-auth-* texts are checked by the compiler, as the auth-url annotations (compile/global-auth.ts).
    [["--global-auth-url", "--hsts"], "--global-auth-url: missing value"],
    [["--global-auth-method", "--hsts"], "--global-auth-method: missing value"],
    [["--global-auth-signin", "--hsts"], "--global-auth-signin: missing value"],
    [["--global-auth-signin-redirect-param", "--hsts"], "--global-auth-signin-redirect-param: missing value"],
    [["--global-auth-response-headers", "--hsts"], "--global-auth-response-headers: missing value"],
    [["--global-auth-request-redirect", "--hsts"], "--global-auth-request-redirect: missing value"],
    [["--global-auth-cache-key", "--hsts"], "--global-auth-cache-key: missing value"],
    [["--global-auth-cache-duration", "--hsts"], "--global-auth-cache-duration: missing value"],
    [["--global-auth-always-set-cookie=yes"], "--global-auth-always-set-cookie: expected true or false"],
    [["--http3=quic"], "--http3: expected true or false"],
    [["--enable-ssl-passthrough=on"], "--enable-ssl-passthrough: expected true or false"],
    // QUIC bypasses the TCP front that reads the ClientHello (serving/passthrough.ts).
    [["--enable-ssl-passthrough", "--http3"], "--enable-ssl-passthrough: cannot be combined with --http3"],
    [["--use-proxy-protocol=yes"], "--use-proxy-protocol: expected true or false"],
    // QUIC carries no PROXY header (serving/front.ts).
    [["--use-proxy-protocol", "--http3"], "--use-proxy-protocol: cannot be combined with --http3"],
    [["--proxy-protocol-header-timeout", "soon"], "--proxy-protocol-header-timeout: "],
    [["--proxy-protocol-trusted", "10.0.0.0/33"], "--proxy-protocol-trusted: expected IPv4/IPv6 CIDRs"],
    [["--workers", "0"], "--workers: expected an integer 1-256"],
    [["--kubeconfig="], "--kubeconfig: expected a non-empty value"],
    [["--context", "--bind", "1.2.3.4"], "--context: missing value"],
    [["--manifests"], "--manifests: missing value"],
    [["--admin-port", "8080"], "--admin-port: port 8080 is already used by --http-port"],
  ];
  test.each(cases)("%p → %p", (argv, expected) => {
    expect(err(argv)).toStartWith(expected);
  });

  test("every flag that takes a value has a bad-value case above", () => {
    const covered = new Set(cases.map(([argv]) => argv[0]!.split("=")[0]));
    for (const spec of Object.values(FLAGS)) expect(covered.has(`--${spec.name}`)).toBe(true);
  });

  test("unknown flags and stray arguments", () => {
    expect(err(["--nope"])).toBe("unknown flag --nope (see --help)");
    expect(err(["--nope=1"])).toBe("unknown flag --nope (see --help)");
    expect(err(["-x"])).toBe('unknown flag "-x" (see --help)');
    expect(err(["serve"])).toBe('unexpected argument "serve" (see --help)');
    expect(err(["--host", "a"])).toBe("unknown flag --host (see --help)"); // explain-only
  });

  test("a switch given a separate value says to use =", () => {
    expect(err(["--hsts", "false"])).toBe('--hsts: a switch takes its value after "=" (--hsts=false)');
  });

  test("a rejected value with a newline stays on one line", () => {
    expect(err(["--bind", "a\nb"])).toBe('--bind: expected an IP address of this host (0.0.0.0, ::, 127.0.0.1, ...) or localhost, got "a\\nb"');
  });
});

describe("listen address and sources", () => {
  test("--bind takes IP literals and localhost; host names are refused before anything listens", () => {
    for (const ok of ["0.0.0.0", "::", "127.0.0.1", "::1", "localhost", "10.1.2.3"]) expect(run(["--bind", ok]).bind).toBe(ok);
    for (const bad of ["notanip", "example.com", "1.2.3", "0.0.0.0:80"]) expect(err(["--bind", bad])).toStartWith("--bind: expected an IP address");
  });

  test("--manifests with --kubeconfig or --context (flag or environment) is refused, naming both", () => {
    expect(err(["--manifests", "m", "--kubeconfig", "k"])).toBe("--manifests and --kubeconfig name two sources; Portico serves either YAML files or a cluster: drop one");
    expect(err(["--manifests", "m", "--context", "c"])).toStartWith("--manifests and --context name two sources");
    expect(err(["--manifests", "m"], { PORTICO_KUBECONFIG: "/k" })).toStartWith("--manifests and PORTICO_KUBECONFIG (--kubeconfig) name two sources");
    expect(err(["explain", "--manifests", "m", "--host", "a", "--kubeconfig", "k"])).toStartWith("--manifests and --kubeconfig name two sources");
    // Each alone is fine; $KUBECONFIG (kubectl's variable, not a flag) does not count.
    expect(run(["--kubeconfig", "k", "--context", "c"]).kubeconfig).toBe("k");
    expect(run(["--manifests", "m"], { KUBECONFIG: "/k" }).manifests).toBe("m");
  });
});

describe("subcommands", () => {
  test("routes takes the shared flags and a source", () => {
    expect(parseArgs(["routes", "--manifests", "m.yaml"], {})).toMatchObject({ type: "routes", config: { manifests: "m.yaml" } });
    expect(parseArgs(["routes", "--kubeconfig", "k", "--watch-namespace", "shop"], {})).toMatchObject({ type: "routes", config: { kubeconfig: "k", watchNamespace: "shop" } });
    expect(err(["routes", "--host", "a"])).toBe("unknown flag --host (see --help)");
    // Its output is for people: problems after the table are text lines unless asked otherwise.
    expect(parseArgs(["routes", "--manifests", "m"], {})).toMatchObject({ config: { logFormat: "text", bind: "0.0.0.0" } });
    expect(parseArgs(["routes", "--manifests", "m", "--log-format", "json"], {})).toMatchObject({ config: { logFormat: "json" } });
  });

  test("demo: loopback, text logs and no shutdown delay unless said otherwise; no source of its own", () => {
    expect(parseArgs(["demo"], {})).toMatchObject({ type: "demo", config: { bind: "127.0.0.1", logFormat: "text", shutdownDelayMs: 0, manifests: null } });
    expect(parseArgs(["demo", "--log-format", "json", "--http-port", "9080"], { PORTICO_BIND: "0.0.0.0" })).toMatchObject({ type: "demo", config: { bind: "0.0.0.0", logFormat: "json", httpPort: 9080 } });
    expect(err(["demo", "--manifests", "m"])).toBe("demo: --manifests cannot be used: the demo serves its own manifests and backends");
    expect(err(["demo"], { PORTICO_KUBECONFIG: "/k" })).toStartWith("demo: PORTICO_KUBECONFIG (--kubeconfig) cannot be used");
    // Only the first word is a subcommand.
    expect(err(["--http-port", "81", "demo"])).toBe('unexpected argument "demo" (see --help)');
  });
});

describe("help and version", () => {
  test("--help and -h list every flag with its default and env twin", () => {
    for (const argv of [["--help"], ["-h"], ["--http-port", "x", "--help"]]) {
      if (parseArgs(argv, {}).type !== "help") throw new Error(`expected help for ${argv.join(" ")}`);
      const o = { text: helpText() };
      for (const spec of Object.values(FLAGS)) {
        expect(o.text).toContain(`--${spec.name}`);
        expect(o.text).toContain(envName(spec.name));
        expect(o.text).toContain(`default: ${spec.defaultText}`);
      }
      for (const name of ["--host", "--path", "--scheme", "--version"]) expect(o.text).toContain(name);
    }
  });

  test("--version", () => {
    expect(parseArgs(["--version"], {})).toEqual({ type: "version" });
  });
});

describe("migrate", () => {
  test("always ingress-nginx's class rules; --output and --nginx-configmap", () => {
    const o = parseArgs(["migrate", "--manifests", "m", "--output", "json", "--nginx-configmap", "ingress-nginx/ingress-nginx-controller"], {});
    expect(o).toMatchObject({
      type: "migrate", output: "json", nginxConfigMap: { namespace: "ingress-nginx", name: "ingress-nginx-controller" },
      config: { ingressNginxCompat: true, ingressClass: "nginx", controllerName: "k8s.io/ingress-nginx" },
    });
    expect(parseArgs(["migrate", "--ingress-class", "nginx-public"], {})).toMatchObject({ output: "text", nginxConfigMap: null, config: { ingressClass: "nginx-public" } });
    expect(parseArgs(["migrate", "--nginx-configmap", "Bad/Name"], {})).toMatchObject({ type: "error" });
    // The Gateway's name is also the GatewayClass's: a DNS-1123 subdomain, each label whole
    // (Kubernetes API object names), so no empty label and no label that starts or ends with "-".
    for (const bad of ["a..b", "a.-b", "a-.b", "-a", "A"]) expect(parseArgs(["migrate", "--to", "gateway-api", "--gateway-name", bad], {})).toMatchObject({ type: "error" });
    expect(parseArgs(["migrate", "--to", "gateway-api", "--gateway-name", "edge.gw-1"], {})).toMatchObject({ type: "migrate", toGateway: { name: "edge.gw-1" } });
  });

  test("serving takes --nginx-configmap too, and says which flags were given (they win over its keys)", () => {
    const o = parseArgs(["--nginx-configmap", "ingress-nginx/ingress-nginx-controller", "--hsts-max-age", "60"], { PORTICO_MAX_BODY_SIZE: "1m", PORTICO_HSTS: "" });
    expect(o).toMatchObject({ type: "run", config: { nginxConfigmap: { namespace: "ingress-nginx", name: "ingress-nginx-controller" } } });
    if (o.type !== "run") throw new Error("not run");
    expect([...o.explicit].sort()).toEqual(["hstsMaxAge", "maxBodySize", "nginxConfigmap"]);
    expect(parseArgs(["--output", "json"], {})).toMatchObject({ type: "error" }); // migrate-only
  });
});

describe("explain", () => {
  test("parses host, path, scheme and the shared flags", () => {
    const o = parseArgs(["explain", "--manifests", "m.yaml", "--host", "a.test", "--path", "/x", "--scheme", "https", "--ingress-class", "edge"], {});
    expect(o).toMatchObject({ type: "explain", host: "a.test", path: "/x", scheme: "https", config: { manifests: "m.yaml", ingressClass: "edge" } });
  });

  test("path defaults to /, scheme to http; manifests may come from the environment", () => {
    const o = parseArgs(["explain", "--host=a.test"], { PORTICO_MANIFESTS: "/m" });
    expect(o).toMatchObject({ type: "explain", host: "a.test", path: "/", scheme: "http" });
  });

  test("errors", () => {
    expect(err(["explain", "--host", "a"])).toBe("explain: --manifests is required");
    expect(err(["explain", "--manifests", "m"])).toBe("explain: --host is required");
    expect(err(["explain", "--manifests", "m", "--host", "a", "--path", "x"])).toStartWith("--path: expected a path starting with /");
    expect(err(["explain", "--manifests", "m", "--host", "a", "--scheme", "ftp"])).toStartWith("--scheme: expected http or https");
    expect(err(["explain", "--manifests", "m", "--host", "a", "--accept-encoding", "gzip\u0001"])).toStartWith("--accept-encoding: expected a header value");
  });

  test("--accept-encoding: the request's Accept-Encoding, for response.compression", () => {
    expect(parseArgs(["explain", "--manifests", "m", "--host", "a", "--accept-encoding", "gzip, br"], {})).toMatchObject({ type: "explain", acceptEncoding: "gzip, br" });
  });
});
