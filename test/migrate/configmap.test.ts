// ingress-nginx's ConfigMap in the migration report: each key honoured by a flag, done anyway,
// or not honoured; ingress-nginx defaults that differ; and the snippet gates it sets.
import { describe, expect, test } from "bun:test";
import { Compiler } from "../../src/compile/compile.ts";
import { migrationReport } from "../../src/compile/migrate.ts";
import { formatMigrationText, shellFlag } from "../../src/compile/migrate-text.ts";
import { configMapReport, parseNginxConfigMap, snippetGate, type NginxConfigMap } from "../../src/compile/nginx-configmap.ts";
import { parseArgs } from "../../src/config/parse.ts";
import { loadFixture } from "../compile/snapshot.ts";

const cm = (data: Record<string, string>): NginxConfigMap => ({ namespace: "ingress-nginx", name: "ingress-nginx-controller", data });
const key = (data: Record<string, string>, k: string) => configMapReport(cm(data)).keys.find((x) => x.key === k)!;

describe("ConfigMap keys", () => {
  test.each([
    [{ "proxy-body-size": "8m" }, "proxy-body-size", "flag", ["--max-body-size=8m"]],
    [{ "proxy-connect-timeout": "10" }, "proxy-connect-timeout", "flag", ["--connect-timeout=10s"]],
    [{ "proxy-connect-timeout": "5" }, "proxy-connect-timeout", "same", []],
    [{ "proxy-read-timeout": "120" }, "proxy-read-timeout", "flag", ["--response-timeout=120s", "--stream-idle-timeout=120s"]],
    // nginx's read timer also bounds each gap of a body: 60 s sets Portico's 5 min idle default too.
    [{ "proxy-read-timeout": "60" }, "proxy-read-timeout", "flag", ["--response-timeout=60s", "--stream-idle-timeout=60s"]],
    [{ "proxy-send-timeout": "120" }, "proxy-send-timeout", "not-honoured", []],
    // config.go: the proxy-redirect-*/proxy-cookie-* defaults are `off`; another value is the
    // default of every Ingress without the annotation (proxy/main.go).
    [{ "proxy-redirect-from": "off" }, "proxy-redirect-from", "same", []],
    [{ "proxy-redirect-from": "hello.com", "proxy-redirect-to": "goodbye.com" }, "proxy-redirect-from", "flag", ["--proxy-redirect-from=hello.com"]],
    [{ "proxy-redirect-to": "goodbye.com" }, "proxy-redirect-to", "flag", ["--proxy-redirect-to=goodbye.com"]],
    [{ "proxy-cookie-path": "/one/ /" }, "proxy-cookie-path", "flag", ["--proxy-cookie-path=/one/ /"]],
    [{ "proxy-cookie-domain": "off" }, "proxy-cookie-domain", "same", []],
    [{ hsts: "false" }, "hsts", "flag", ["--hsts=false"]],
    [{ "ssl-protocols": "TLSv1.3" }, "ssl-protocols", "flag", ["--tls-min-version=1.3"]],
    [{ "ssl-protocols": "TLSv1.1 TLSv1.2" }, "ssl-protocols", "not-honoured", []],
    [{ "ssl-protocols": "TLSv1.2" }, "ssl-protocols", "flag", ["--tls-max-version=1.2"]],
    [{ "ssl-protocols": "TLSv1.3 TLSv1.2" }, "ssl-protocols", "same", []],
    [{ "ssl-ecdh-curve": "auto" }, "ssl-ecdh-curve", "same", []],
    [{ "ssl-ecdh-curve": "X25519:P-256" }, "ssl-ecdh-curve", "flag", ["--tls-ecdh-curve=X25519:P-256"]],
    // nginx.tmpl: X-Forwarded-For is $remote_addr unless use-forwarded-headers and
    // compute-full-forwarded-for (config.go default false); enable-real-ip alone believes the
    // address only (real_ip_header), use-forwarded-headers also -Proto/-Host/-Port (lua_ingress.lua).
    [{ "use-forwarded-headers": "true" }, "use-forwarded-headers", "flag", ["--trusted-proxies=0.0.0.0/0,::/0", "--trusted-proxy-headers=all", "--compute-full-forwarded-for=false"]],
    [{ "use-forwarded-headers": "true", "proxy-real-ip-cidr": "10.0.0.0/8, 192.168.0.0/16" }, "use-forwarded-headers", "flag", ["--trusted-proxies=10.0.0.0/8,192.168.0.0/16", "--trusted-proxy-headers=all", "--compute-full-forwarded-for=false"]],
    [{ "use-forwarded-headers": "true", "compute-full-forwarded-for": "true" }, "use-forwarded-headers", "flag", ["--trusted-proxies=0.0.0.0/0,::/0", "--trusted-proxy-headers=all", "--compute-full-forwarded-for=true"]],
    [{ "use-forwarded-headers": "true", "compute-full-forwarded-for": "true" }, "compute-full-forwarded-for", "flag", ["--compute-full-forwarded-for=true"]],
    [{ "compute-full-forwarded-for": "true" }, "compute-full-forwarded-for", "same", []],
    [{ "enable-real-ip": "true" }, "enable-real-ip", "flag", ["--trusted-proxies=0.0.0.0/0,::/0", "--trusted-proxy-headers=address", "--compute-full-forwarded-for=false"]],
    [{ "enable-real-ip": "true", "compute-full-forwarded-for": "true" }, "enable-real-ip", "flag", ["--trusted-proxies=0.0.0.0/0,::/0", "--trusted-proxy-headers=address", "--compute-full-forwarded-for=false"]],
    [{ "enable-real-ip": "true", "use-forwarded-headers": "true" }, "enable-real-ip", "flag", ["--trusted-proxies=0.0.0.0/0,::/0", "--trusted-proxy-headers=all", "--compute-full-forwarded-for=false"]],
    // ingress-nginx's use-proxy-protocol (nginx.tmpl `listen ... proxy_protocol`) is served by the TCP front.
    // nginx.tmpl: one `set_real_ip_from` per proxy-real-ip-cidr entry (configmap.go: split on
    // commas, trimmed; absent, 0.0.0.0/0) beside `real_ip_header proxy_protocol`: only those
    // peers' PROXY headers name the client.
    [{ "use-proxy-protocol": "true" }, "use-proxy-protocol", "flag", ["--use-proxy-protocol", "--proxy-protocol-trusted=0.0.0.0/0"]],
    [{ "use-proxy-protocol": "true", "proxy-real-ip-cidr": "10.0.0.0/8, fd00::/8" }, "use-proxy-protocol", "flag", ["--use-proxy-protocol", "--proxy-protocol-trusted=10.0.0.0/8,fd00::/8"]],
    // An empty value writes no set_real_ip_from: no peer's header is believed.
    [{ "use-proxy-protocol": "true", "proxy-real-ip-cidr": "" }, "use-proxy-protocol", "flag", ["--use-proxy-protocol", "--proxy-protocol-trusted="]],
    // With use-forwarded-headers the peer is still matched against set_real_ip_from (the header
    // is then X-Forwarded-For-Proxy-Protocol), and X-Forwarded-For keeps its own flag.
    [{ "use-proxy-protocol": "true", "use-forwarded-headers": "true", "proxy-real-ip-cidr": "10.0.0.0/8" }, "use-proxy-protocol", "flag", ["--use-proxy-protocol", "--proxy-protocol-trusted=10.0.0.0/8"]],
    [{ "use-proxy-protocol": "true", "use-forwarded-headers": "true", "proxy-real-ip-cidr": "10.0.0.0/8" }, "use-forwarded-headers", "flag", ["--trusted-proxies=10.0.0.0/8", "--trusted-proxy-headers=all", "--compute-full-forwarded-for=false"]],
    [{ "use-proxy-protocol": "true", "proxy-real-ip-cidr": "10.0.0.0/8" }, "proxy-real-ip-cidr", "same", []],
    [{ "use-proxy-protocol": "false" }, "use-proxy-protocol", "same", []],
    [{ "use-proxy-protocol": "true", "proxy-protocol-header-timeout": "10s" }, "proxy-protocol-header-timeout", "flag", ["--proxy-protocol-header-timeout=10s"]],
    [{ "proxy-protocol-header-timeout": "5s" }, "proxy-protocol-header-timeout", "same", []],
    // nginx.tmpl: use-proxy-protocol without use-forwarded-headers sets real_ip_header proxy_protocol.
    [{ "use-proxy-protocol": "true", "enable-real-ip": "true" }, "enable-real-ip", "same", []],
    // config.go ProxySSLLocationOnly (default false): controller.go createServers.
    [{ "proxy-ssl-location-only": "true" }, "proxy-ssl-location-only", "flag", ["--proxy-ssl-location-only=true"]],
    [{ "proxy-ssl-location-only": "false" }, "proxy-ssl-location-only", "same", []],
    [{ "http-redirect-code": "308" }, "http-redirect-code", "same", []],
    [{ "http-redirect-code": "301" }, "http-redirect-code", "flag", ["--http-redirect-code=301"]],
    [{ "load-balance": "ewma" }, "load-balance", "not-honoured", []],
    [{ "whitelist-source-range": "10.0.0.0/8, 192.0.2.1" }, "whitelist-source-range", "flag", ["--allowlist-source-range=10.0.0.0/8,192.0.2.1"]],
    [{ "denylist-source-range": "192.0.2.0/24" }, "denylist-source-range", "flag", ["--denylist-source-range=192.0.2.0/24"]],
    [{ "limit-req-status-code": "429" }, "limit-req-status-code", "flag", ["--limit-req-status-code=429"]],
    [{ "limit-conn-status-code": "503" }, "limit-conn-status-code", "same", []],
    [{ "ssl-redirect": "false" }, "ssl-redirect", "flag", ["--ssl-redirect=false"]],
    [{ "ssl-redirect": "true" }, "ssl-redirect", "same", []],
    [{ "force-ssl-redirect": "true" }, "force-ssl-redirect", "flag", ["--force-ssl-redirect=true"]],
    [{ "hsts-include-subdomains": "true" }, "hsts-include-subdomains", "flag", ["--hsts-include-subdomains=true"]],
    [{ "hsts-preload": "true" }, "hsts-preload", "flag", ["--hsts-preload=true"]],
    [{ "worker-processes": "4" }, "worker-processes", "flag", ["--workers=4"]],
    // config.go ShowServerTokens; nginx.tmpl server_tokens on, or off with `more_clear_headers Server`.
    [{ "server-tokens": "true" }, "server-tokens", "flag", ["--server-header=portico"]],
    [{ "server-tokens": "false" }, "server-tokens", "flag", ["--server-header=none"]],
    // config.go UseGzip, GzipLevel, GzipMinLength, GzipTypes, GzipDisable; nginx.tmpl's gzip block.
    [{ "use-gzip": "true" }, "use-gzip", "flag", ["--gzip=true"]],
    [{ "use-gzip": "false" }, "use-gzip", "same", []],
    [{ "gzip-level": "4" }, "gzip-level", "flag", ["--gzip-level=4"]],
    [{ "gzip-level": "1" }, "gzip-level", "same", []],
    [{ "gzip-min-length": "100" }, "gzip-min-length", "flag", ["--gzip-min-length=100"]],
    [{ "gzip-types": "text/html  application/json" }, "gzip-types", "flag", ["--gzip-types=text/html,application/json"]],
    [{ "gzip-disable": "msie6" }, "gzip-disable", "flag", ["--gzip-disable=msie6"]],
    [{ "enable-brotli": "true" }, "enable-brotli", "flag", ["--brotli=true"]],
    [{ "brotli-level": "4" }, "brotli-level", "same", []],
    [{ "brotli-level": "11" }, "brotli-level", "flag", ["--brotli-level=11"]],
    [{ "brotli-min-length": "24" }, "brotli-min-length", "flag", ["--brotli-min-length=24"]],
    [{ "brotli-types": "application/octet-stream" }, "brotli-types", "flag", ["--brotli-types=application/octet-stream"]],
    // customheaders/main.go reads global-allowed-response-headers; nginx.tmpl's http-level
    // `deny` and the block `map`s (template/configmap.go splitAndTrimSpace).
    [{ "global-allowed-response-headers": "X-A, X-B" }, "global-allowed-response-headers", "flag", ["--global-allowed-response-headers=X-A,X-B"]],
    [{ "block-cidrs": "10.0.0.0/8, 192.0.2.1" }, "block-cidrs", "flag", ["--block-cidrs=10.0.0.0/8,192.0.2.1"]],
    [{ "block-user-agents": "~*bot, AlphaBot" }, "block-user-agents", "flag", ["--block-user-agents=~*bot,AlphaBot"]],
    [{ "block-referers": "~*example\\.com,qwerty" }, "block-referers", "flag", ["--block-referers=~*example\\.com,qwerty"]],
    // nginx.go: GetConfigMap(value), a namespace/name key.
    [{ "add-headers": "ingress-nginx/custom-headers" }, "add-headers", "flag", ["--add-headers=ingress-nginx/custom-headers"]],
    [{ "proxy-set-headers": "ingress-nginx/proxy-headers" }, "proxy-set-headers", "flag", ["--proxy-set-headers=ingress-nginx/proxy-headers"]],
    // configmap.go ReadConfig: the global auth location nginx.tmpl gives a location without its own auth-url.
    [{ "global-auth-url": " http://auth.example/check " }, "global-auth-url", "flag", ["--global-auth-url=http://auth.example/check"]],
    [{ "global-auth-url": "" }, "global-auth-url", "same", []],
    [{ "global-auth-method": "POST" }, "global-auth-method", "flag", ["--global-auth-method=POST"]],
    [{ "global-auth-signin": "https://auth.example/start" }, "global-auth-signin", "flag", ["--global-auth-signin=https://auth.example/start"]],
    [{ "global-auth-signin-redirect-param": "back" }, "global-auth-signin-redirect-param", "flag", ["--global-auth-signin-redirect-param=back"]],
    [{ "global-auth-response-headers": "Foo, Bar" }, "global-auth-response-headers", "flag", ["--global-auth-response-headers=Foo, Bar"]],
    [{ "global-auth-request-redirect": "Foo-Redirect" }, "global-auth-request-redirect", "flag", ["--global-auth-request-redirect=Foo-Redirect"]],
    [{ "global-auth-cache-key": "$remote_user$http_authorization" }, "global-auth-cache-key", "flag", ["--global-auth-cache-key=$remote_user$http_authorization"]],
    [{ "global-auth-cache-duration": "200 201 401 30m" }, "global-auth-cache-duration", "flag", ["--global-auth-cache-duration=200 201 401 30m"]],
    [{ "global-auth-always-set-cookie": "true" }, "global-auth-always-set-cookie", "flag", ["--global-auth-always-set-cookie=true"]],
    [{ "global-auth-snippet": "proxy_set_header A b;" }, "global-auth-snippet", "not-honoured", []],
    // nginx.tmpl: `{{ if or $cfg.DisableAccessLog $cfg.DisableHTTPAccessLog }} access_log off;`;
    // the stream block's own log serves tcp-services/udp-services, which Portico does not proxy.
    [{ "disable-http-access-log": "true" }, "disable-http-access-log", "flag", ["--access-log=off"]],
    [{ "disable-http-access-log": "false" }, "disable-http-access-log", "same", []],
    [{ "disable-stream-access-log": "true" }, "disable-stream-access-log", "same", []],
    [{ "disable-stream-access-log": "yes" }, "disable-stream-access-log", "not-honoured", []],
    // nginx.tmpl: log_format upstreaminfo [escape=none|escape=json] '<log-format-upstream>', none checked first.
    [{ "log-format-upstream": '{"ip":"$remote_addr"}' }, "log-format-upstream", "flag", ['--access-log-template={"ip":"$remote_addr"}']],
    [{ "log-format-upstream": "it's" }, "log-format-upstream", "not-honoured", []],
    [{ "log-format-upstream": "cost $" }, "log-format-upstream", "not-honoured", []],
    // The flag's name for ingress-nginx's default format: not a format nginx would log as a constant line here.
    [{ "log-format-upstream": "ingress-nginx" }, "log-format-upstream", "not-honoured", []],
    [{ "log-format-escape-json": "true" }, "log-format-escape-json", "flag", ["--access-log-escape=json"]],
    [{ "log-format-escape-json": "true", "log-format-escape-none": "true" }, "log-format-escape-json", "same", []],
    [{ "log-format-escape-json": "true", "log-format-escape-none": "true" }, "log-format-escape-none", "flag", ["--access-log-escape=none"]],
    [{ "log-format-escape-none": "false" }, "log-format-escape-none", "same", []],
    // defaults.Backend LimitRate / LimitRateAfter; template.go `limit_rate <n>k;` only for n > 0.
    [{ "limit-rate": "90" }, "limit-rate", "flag", ["--limit-rate=90k"]],
    [{ "limit-rate": "0" }, "limit-rate", "same", []],
    [{ "limit-rate": "1k" }, "limit-rate", "not-honoured", []],
    [{ "limit-rate-after": "512" }, "limit-rate-after", "flag", ["--limit-rate-after=512k"]],
    // defaults.Backend ProxyBuffering / ProxyBufferSize / ProxyBuffersNumber (nginx.tmpl proxy_buffering, proxy_buffer_size, proxy_buffers).
    [{ "proxy-buffering": "On" }, "proxy-buffering", "flag", ["--proxy-buffering=true"]],
    [{ "proxy-buffering": "off" }, "proxy-buffering", "same", []],
    [{ "proxy-buffering": "yes" }, "proxy-buffering", "not-honoured", []],
    [{ "proxy-buffer-size": "16K" }, "proxy-buffer-size", "flag", ["--proxy-buffer-size=16k"]],
    [{ "proxy-buffer-size": "4k" }, "proxy-buffer-size", "same", []],
    [{ "proxy-buffer-size": "0" }, "proxy-buffer-size", "not-honoured", []],
    [{ "proxy-buffer-size": "1g" }, "proxy-buffer-size", "not-honoured", []],
    [{ "proxy-buffers-number": "8" }, "proxy-buffers-number", "same", []],
    [{ "proxy-buffers-number": "eight" }, "proxy-buffers-number", "not-honoured", []],
    [{ "some-future-key": "x" }, "some-future-key", "not-honoured", []],
    [{ "proxy-connect-timeout": "5s" }, "proxy-connect-timeout", "not-honoured", []],
  ] as const)("%p: %s is %s", (data, k, status, flags) => {
    expect(key(data, k)).toMatchObject({ status, flags });
  });

  // ngx_http_upstream_send_response sets r->limit_rate = 0 for an unbuffered answer: with
  // proxy-buffering off (the default) the key paces only Ingresses that turn buffering on, and an
  // answer the pod marks X-Accel-Buffering: yes (ngx_http_upstream_process_buffering buffers it).
  test("limit-rate with proxy-buffering off says it paces nothing then but a pod's X-Accel-Buffering: yes answer; with it on, it does not", () => {
    const NOTE = "as in ingress-nginx, limit-rate paces only buffered answers: set proxy-buffering: on";
    const ACCEL = "save on an answer the pod marks `X-Accel-Buffering: yes`";
    for (const data of [{ "limit-rate": "90" }, { "limit-rate": "90", "proxy-buffering": "off" }] as Record<string, string>[]) {
      expect(key(data, "limit-rate").text).toContain(NOTE);
      expect(key(data, "limit-rate").text).toContain(ACCEL);
    }
    expect(key({ "limit-rate-after": "512" }, "limit-rate-after").text).toContain(NOTE);
    expect(key({ "limit-rate-after": "512" }, "limit-rate-after").text).toContain(ACCEL);
    const on = key({ "limit-rate": "90", "proxy-buffering": "on" }, "limit-rate");
    expect(on).toMatchObject({ status: "flag", flags: ["--limit-rate=90k"] });
    expect(on.text).not.toContain(NOTE);
  });

  test("ingress-nginx defaults that differ from Portico's are reported when their key is absent", () => {
    const r = configMapReport(cm({}));
    expect(r.keys.map((k) => [k.key, k.value, k.status])).toEqual([
      ["hsts-include-subdomains", null, "flag"],
      ["log-format-upstream", null, "flag"],
      ["proxy-body-size", null, "flag"],
      ["server-tokens", null, "flag"],
    ]);
    // Portico keeps its own access-log fields; the report names ingress-nginx's default format
    // (config.go logFormatUpstream) by the flag value that selects it.
    expect(r.flags).toEqual(["--hsts-include-subdomains=true", "--access-log-template=ingress-nginx", "--max-body-size=1m", "--server-header=none"]);
    expect(r.notHonoured).toBe(0);
  });

  test("the flags to run with are listed once", () => {
    const r = configMapReport(cm({ "use-forwarded-headers": "true", "enable-real-ip": "true", "proxy-real-ip-cidr": "10.0.0.0/8" }));
    expect(r.flags).toEqual(["--trusted-proxies=10.0.0.0/8", "--trusted-proxy-headers=all", "--compute-full-forwarded-for=false", "--hsts-include-subdomains=true", "--access-log-template=ingress-nginx", "--max-body-size=1m", "--server-header=none"]); // in key order
  });

  // large-client-header-buffers (config.go `4 8k`; nginx reads `<number> <size>`,
  // ngx_conf_set_bufs_slot): the same flag, bounded by the 64 KiB head Portico's parser takes.
  test("large-client-header-buffers: the same value, a larger one bounded, text nginx refuses invalid", () => {
    expect(key({ "large-client-header-buffers": "4 8k" }, "large-client-header-buffers")).toMatchObject({ status: "same", flags: [] });
    expect(key({ "large-client-header-buffers": "4 16k" }, "large-client-header-buffers")).toMatchObject({ status: "flag", flags: ["--large-client-header-buffers=4 16k"] });
    expect(key({ "large-client-header-buffers": " 8  1024 " }, "large-client-header-buffers")).toMatchObject({ status: "flag", flags: ["--large-client-header-buffers=8 1k"] });
    const big = key({ "large-client-header-buffers": "4 32k" }, "large-client-header-buffers");
    expect(big).toMatchObject({ status: "flag", bounded: true, flags: ["--large-client-header-buffers=2 32k"] });
    expect(big.text).toContain("bounded to 2 32k");
    expect(key({ "large-client-header-buffers": "1 1m" }, "large-client-header-buffers").flags).toEqual(["--large-client-header-buffers=1 64k"]);
    for (const val of ["8k", "4 8g", "0 8k", "4 8 k", "4 100", "four 8k", "4 8k 1"]) {
      expect([val, key({ "large-client-header-buffers": val }, "large-client-header-buffers")]).toMatchObject([val, { status: "not-honoured", invalid: true }]);
    }
    // What the report names, the flag takes.
    const parsed = parseArgs(["--large-client-header-buffers=2 32k"], {});
    expect(parsed).toMatchObject({ type: "run", config: { largeClientHeaderBuffers: { number: 2, size: 32768 } } });
  });

  // nginx.tmpl `ssl_ciphers '{{ $cfg.SSLCiphers }}';`: an OpenSSL cipher string. The report
  // names the suites it selects as OpenSSL 3 reads it (`openssl ciphers`), restricted to the
  // ones Portico serves; the flag takes the string as written and reads it the same way.
  test("ssl-ciphers: an OpenSSL cipher string, reported as the suites it selects", () => {
    const high = key({ "ssl-ciphers": "HIGH:!aNULL:!MD5" }, "ssl-ciphers");
    expect(high).toMatchObject({ status: "flag", flags: ["--tls-ciphers=HIGH:!aNULL:!MD5"] });
    expect(high.text).toBe(
      "TLS 1.2 cipher suites, the string read as OpenSSL 3 reads it, in this order: ECDHE-ECDSA-AES256-GCM-SHA384, ECDHE-RSA-AES256-GCM-SHA384, ECDHE-ECDSA-CHACHA20-POLY1305, ECDHE-RSA-CHACHA20-POLY1305, ECDHE-ECDSA-AES128-GCM-SHA256, ECDHE-RSA-AES128-GCM-SHA256, ECDHE-ECDSA-AES128-SHA256, ECDHE-RSA-AES128-SHA256, ECDHE-ECDSA-AES256-SHA, ECDHE-RSA-AES256-SHA, ECDHE-ECDSA-AES128-SHA, ECDHE-RSA-AES128-SHA, AES256-GCM-SHA384, AES128-GCM-SHA256, AES256-SHA, AES128-SHA",
    );
    expect(key({ "ssl-ciphers": "ECDHE+AESGCM:!SHA1" }, "ssl-ciphers").text).toEndWith("in this order: ECDHE-ECDSA-AES256-GCM-SHA384, ECDHE-RSA-AES256-GCM-SHA384, ECDHE-ECDSA-AES128-GCM-SHA256, ECDHE-RSA-AES128-GCM-SHA256");
    // settings/ssl_ciphers.go's value: OpenSSL 3 has none of EXPORT56, RC4, SSLv2 and EXP.
    const go = key({ "ssl-ciphers": "ALL:!aNULL:!EXPORT56:RC4+RSA:+HIGH:+MEDIUM:+LOW:+SSLv2:+EXP" }, "ssl-ciphers");
    expect(go).toMatchObject({ status: "flag", flags: ["--tls-ciphers=ALL:!aNULL:!EXPORT56:RC4+RSA:+HIGH:+MEDIUM:+LOW:+SSLv2:+EXP"] });
    expect(go.text).toEndWith("AES256-SHA, AES128-SHA; EXPORT56, RC4, SSLv2, EXP select nothing (OpenSSL skips names it lacks)");
    // What OpenSSL refuses fails nginx's configuration test; what selects none of Portico's suites cannot serve.
    expect(key({ "ssl-ciphers": "HIGH:%MD5" }, "ssl-ciphers")).toMatchObject({ status: "not-honoured", invalid: true, flags: [] });
    const dhe = key({ "ssl-ciphers": "DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384" }, "ssl-ciphers");
    expect(dhe).toMatchObject({ status: "not-honoured", invalid: true, flags: [] });
    expect(dhe.text).toStartWith("no suite Portico can serve");
    // What the report names, the flag takes, and reads the same way.
    for (const val of ["HIGH:!aNULL:!MD5", "ALL:!aNULL:!EXPORT56:RC4+RSA:+HIGH:+MEDIUM:+LOW:+SSLv2:+EXP"]) {
      const parsed = parseArgs([`--tls-ciphers=${val}`], {});
      expect(parsed.type === "run" ? parsed.config.tlsCiphers.split(":").join(", ") : parsed.type).toBe(high.text.slice(high.text.indexOf(": ") + 2));
    }
  });

  test("a value ingress-nginx would not read is marked invalid (serving keeps the key's last good value)", () => {
    for (const [k, val] of [["ssl-redirect", "maybe"], ["proxy-body-size", "8 MB"], ["hsts-max-age", "-1"], ["limit-req-status-code", "4xx"], ["custom-http-errors", "200"], ["use-gzip", "yes"], ["gzip-level", "10"], ["gzip-min-length", "-1"], ["enable-brotli", "on"], ["brotli-level", "12"]] as const) {
      expect(key({ [k]: val }, k)).toMatchObject({ status: "not-honoured", invalid: true });
    }
    expect(key({ "proxy-send-timeout": "30" }, "proxy-send-timeout").invalid).toBeUndefined();
    // nginx refuses `set_real_ip_from 10.0.0.0/33`: use-proxy-protocol is not applied rather than
    // applied with every peer's PROXY header believed.
    expect(key({ "use-proxy-protocol": "true", "proxy-real-ip-cidr": "10.0.0.0/33" }, "use-proxy-protocol")).toMatchObject({ status: "not-honoured", invalid: true, flags: [] });
  });

  // The one table serves both: every flag it names is one Portico has, and takes the value named
  // (serving validates it with the flag's own schema, runtime/nginx-settings.ts).
  test("every flag the table names exists and accepts the value it names", () => {
    const data: Record<string, string> = {
      "proxy-body-size": "8m", "proxy-connect-timeout": "10", "proxy-read-timeout": "120", "client-body-timeout": "30", hsts: "false",
      "hsts-max-age": "100", "hsts-include-subdomains": "true", "hsts-preload": "true", "ssl-protocols": "TLSv1.3",
      "ssl-ciphers": "ECDHE-RSA-AES128-GCM-SHA256", "use-forwarded-headers": "true", "enable-real-ip": "true", "proxy-real-ip-cidr": "10.0.0.0/8",
      "ssl-redirect": "false", "force-ssl-redirect": "true", "whitelist-source-range": "10.0.0.0/8", "denylist-source-range": "192.0.2.0/24",
      "limit-req-status-code": "429", "limit-conn-status-code": "429", "custom-http-errors": "404,503", "enable-underscores-in-headers": "true",
      "worker-processes": "4", "disable-access-log": "true", "server-tokens": "true",
      "log-format-upstream": '$remote_addr "$request" $status', "log-format-escape-json": "true", "limit-rate": "90", "limit-rate-after": "1",
      "use-gzip": "true", "gzip-level": "4", "gzip-min-length": "100", "gzip-types": "text/html application/json", "gzip-disable": "msie6",
      "enable-brotli": "true", "brotli-level": "6", "brotli-min-length": "24", "brotli-types": "application/octet-stream text/plain",
      "global-auth-url": "http://auth.example/check", "global-auth-method": "POST", "global-auth-signin": "https://auth.example/start?x=1",
      "global-auth-signin-redirect-param": "back", "global-auth-response-headers": "Foo, Bar", "global-auth-request-redirect": "Foo-Redirect",
      "global-auth-cache-key": "$remote_user", "global-auth-cache-duration": "200 1m, any 5s", "global-auth-always-set-cookie": "true",
    };
    const flags = configMapReport(cm(data)).flags;
    expect(flags.length).toBeGreaterThan(20);
    const args = flags.flatMap((f) => (f.includes("=") ? [f] : [`${f}=true`]));
    const parsed = parseArgs(args, {});
    expect(parsed).toMatchObject({
      type: "run",
      config: {
        allowlistSourceRange: ["10.0.0.0/8"], sslRedirect: false, hstsPreload: true, limitReqStatusCode: 429, serverHeader: "portico",
        globalAuthUrl: "http://auth.example/check", globalAuthResponseHeaders: "Foo, Bar", globalAuthCacheDuration: "200 1m, any 5s", globalAuthAlwaysSetCookie: true,
      },
    });
  });

  test("only a ConfigMap with string data is read", () => {
    expect(parseNginxConfigMap({ metadata: { name: "x" }, data: { a: "1" } })).toEqual({ ok: true, configMap: { name: "x", namespace: "default", data: { a: "1" } } });
    expect(parseNginxConfigMap({ metadata: { name: "x" }, data: { a: 1 } }).ok).toBe(false);
    expect(parseNginxConfigMap("x").ok).toBe(false);
  });
});

describe("snippet gates (ingress-nginx's annotation risk levels and allow-snippet-annotations)", () => {
  test("which way ingress-nginx treated snippets", () => {
    expect(snippetGate(null)).toBe("executed");
    expect(snippetGate(cm({}))).toBe("rejected"); // the defaults since v1.12: risk level High
    expect(snippetGate(cm({ "annotations-risk-level": "Critical" }))).toBe("dropped");
    expect(snippetGate(cm({ "annotations-risk-level": "Critical", "allow-snippet-annotations": "true" }))).toBe("executed");
    expect(snippetGate(cm({ "allow-snippet-annotations": "true" }))).toBe("rejected");
  });

  test("a snippet ingress-nginx dropped changes nothing; one whose Ingress it refused is a difference", () => {
    const parsed = parseArgs(["migrate"], {});
    if (parsed.type !== "migrate") throw new Error("flags");
    const fx = loadFixture(
      JSON.stringify({
        apiVersion: "networking.k8s.io/v1",
        kind: "Ingress",
        metadata: { name: "a", namespace: "t", annotations: { "nginx.ingress.kubernetes.io/configuration-snippet": "proxy_set_header X-Real-Host $host;" } },
        spec: { ingressClassName: "nginx", rules: [{ host: "a.test", http: { paths: [{ path: "/", pathType: "Prefix", backend: { service: { name: "web", port: { number: 80 } } } }] } }] },
      }),
    );
    const view = new Compiler(parsed.config).inspect(fx.snapshot, []);
    const one = (c: NginxConfigMap | null) => migrationReport(view, parsed.config, c).ingresses[0]!;
    expect(one(null)).toMatchObject({ status: "partly-served", annotations: [{ status: "not-served" }] });
    expect(one(cm({ "annotations-risk-level": "Critical" }))).toMatchObject({ status: "unchanged", annotations: [{ status: "same" }] });
    const refused = one(cm({}));
    expect(refused).toMatchObject({ status: "differs", annotations: [{ status: "differs" }] });
    expect(refused.annotations[0]!.text).toContain("ingress-nginx refuses this whole Ingress");
  });
});

describe("the flags the text report prints", () => {
  // Pasted into bash, a `!` is history expansion (even inside double quotes) and a space splits
  // the word: each value that is not a plain word is single-quoted, `'` written '\''.
  test("are shell words: an interactive bash reads each back as the flag serving applies", async () => {
    const parsed = parseArgs(["migrate"], {});
    if (parsed.type !== "migrate") throw new Error("flags");
    const fx = loadFixture(
      JSON.stringify({
        apiVersion: "networking.k8s.io/v1",
        kind: "Ingress",
        metadata: { name: "a", namespace: "t" },
        spec: { ingressClassName: "nginx", rules: [{ host: "a.test", http: { paths: [{ path: "/", pathType: "Prefix", backend: { service: { name: "web", port: { number: 80 } } } }] } }] },
      }),
    );
    const view = new Compiler(parsed.config).inspect(fx.snapshot, []);
    const data = {
      "ssl-ciphers": "ECDHE-RSA-AES128-GCM-SHA256:!aNULL",
      "log-format-upstream": `$remote_addr "$request" $status`,
      "block-user-agents": "~*bot's,curl",
      "hsts-max-age": "600",
    };
    const report = migrationReport(view, parsed.config, cm(data));
    const flags = report.configMap!.flags;
    expect(flags).toEqual(expect.arrayContaining(["--tls-ciphers=ECDHE-RSA-AES128-GCM-SHA256:!aNULL", `--access-log-template=${data["log-format-upstream"]}`, "--block-user-agents=~*bot's,curl", "--hsts-max-age=600"]));
    const text = formatMigrationText(report);
    const lines = text.split("\n");
    const at = lines.indexOf("  Run Portico with:");
    const printed = lines.slice(at + 1, at + 1 + flags.length).map((l) => l.trim());
    expect(printed).toContain("--tls-ciphers='ECDHE-RSA-AES128-GCM-SHA256:!aNULL'");
    expect(printed).toContain(`--block-user-agents='~*bot'\\''s,curl'`);
    expect(printed).toContain("--hsts-max-age=600");
    // The key's own line carries them too, each whole on one line.
    expect(lines.some((l) => l.trim() === `--access-log-template='$remote_addr "$request" $status'`)).toBe(true);
    // An interactive bash (history expansion on) reads the printed words back as the flags.
    const script = `${printed.map((w) => `printf '%s\\n' ${w}`).join("\n")}\nexit\n`;
    const bash = Bun.spawn(["bash", "--norc", "--noprofile", "-i"], { stdin: new TextEncoder().encode(script), stdout: "pipe", stderr: "pipe", env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HISTFILE: "/dev/null", TERM: "dumb" } });
    const [out, err] = await Promise.all([new Response(bash.stdout).text(), new Response(bash.stderr).text()]);
    await bash.exited;
    expect(err).not.toContain("event not found");
    expect(out.split("\n").slice(0, -1)).toEqual([...flags]);
  });

  test("shellFlag leaves plain words alone and single-quotes the rest", () => {
    expect(shellFlag("--hsts-max-age=15724800")).toBe("--hsts-max-age=15724800");
    expect(shellFlag("--trusted-proxies=10.0.0.0/8,192.168.0.0/16")).toBe("--trusted-proxies=10.0.0.0/8,192.168.0.0/16");
    expect(shellFlag("--proxy-buffering")).toBe("--proxy-buffering");
    expect(shellFlag("--x=")).toBe("--x=''");
    expect(shellFlag("--x=a b")).toBe("--x='a b'");
    expect(shellFlag("--x=it's")).toBe("--x='it'\\''s'");
    expect(shellFlag("--x=$HOME;`id`*")).toBe("--x='$HOME;`id`*'");
  });
});
