// ssl-ciphers, ssl-prefer-server-ciphers: the TLS 1.2 cipher suites of the HTTPS listener for
// this Ingress's hosts, and the cipher preference (only the server's order can apply). ingress-nginx reads both per Ingress
// (sslcipher/main.go, AnnotationScopeIngress) and writes them into the host's server block
// (nginx.tmpl `ssl_ciphers` / `ssl_prefer_server_ciphers`), the first Ingress of the host in
// priority order that sets each one deciding (controller.go createServers: "only add
// SSLCiphers if the server does not have them previously configured"). Portico gives the
// host's SNI entry its own cipher list (tls/sni.ts; docs/design.md, "Per-host cipher suites").
import type { AnnotationSpec, Family } from "./spec.ts";
import { NGINX_PREFIX } from "./spec.ts";
import * as v from "valibot";
import { Bool, isTrue } from "./values.ts";
import { parseCipherList } from "../config/cipher-list.ts";

export interface SslCiphersPolicy {
  /** The TLS 1.2 suites the annotation's cipher string selects, names separated by colons in the server's order (config/cipher-list.ts), or null: the listener's. */
  readonly ciphers: string | null;
}

export const SSL_CIPHERS: AnnotationSpec = {
  portico: "portico.dev/ssl-ciphers",
  nginx: [`${NGINX_PREFIX}ssl-ciphers`],
  family: "ssl-ciphers",
  default: "--tls-ciphers",
  description:
    "TLS 1.2 cipher suites for this Ingress's hosts, an OpenSSL cipher string (`HIGH:!aNULL:!MD5`, or names separated by colons) as the ConfigMap's `ssl-ciphers`; the first Ingress of a host that sets it counts",
  compat: {
    kind: "differs",
    difference:
      "Read with OpenSSL 3's rules (aliases, `!` `-` `+`, `A+B`, `@STRENGTH`, `@SECLEVEL`) over the TLS 1.2 suites Portico serves, in OpenSSL's order: the suites BoringSSL lacks (finite-field DHE, CAMELLIA, ARIA, CCM) and 3DES and PSK are never offered, and a value ingress-nginx's validator refuses (anything but letters, digits, `!:+-_`, `@STRENGTH` and `@SECLEVEL=0`..`5`; spaces too, which would break nginx's reload), one OpenSSL refuses, or one that leaves none of Portico's suites is an InvalidAnnotation and the host keeps the listener's list. `@SECLEVEL` applies to the suites only. A rule without a host (ingress-nginx's default server) does not set it.",
  },
};

export const SSL_PREFER_SERVER_CIPHERS: AnnotationSpec = {
  portico: "portico.dev/ssl-prefer-server-ciphers",
  nginx: [`${NGINX_PREFIX}ssl-prefer-server-ciphers`],
  family: "ssl-ciphers",
  default: "true",
  description:
    "`true` as Go's ParseBool reads it: the server's order of the cipher suites picks the TLS 1.2 suite, as it does for every host",
  compat: {
    kind: "differs",
    difference:
      "`false` (the client's order) is an InvalidAnnotation and the server's order stays: BoringSSL takes the preference from the listener's first context, before the SNI picks the host's, so it cannot differ per host. `true` is what every host has (nginx.tmpl's `ssl_prefer_server_ciphers on` beside `ssl_ciphers`), so it is served the same.",
  },
  sameWhen: isTrue,
};

// The ConfigMap key's reading (config/cipher-list.ts): an OpenSSL cipher string, evaluated to
// the names it selects; tls/sni.ts checks them against BoringSSL's when it builds the host's
// entry (node:tls is not for this pure module).
// ingress-nginx's validator of the annotation (sslcipher/main.go regexValidSSLCipher): letters,
// digits and `!:+-_`, and the commands `@STRENGTH` and `@SECLEVEL=0`..`5`; any other value is
// invalid content, so the server keeps the ConfigMap's list. Spaces pass that check but end up
// unquoted in the server block (nginx.tmpl `ssl_ciphers {{ $server.SSLCiphers }};`), where nginx
// reads them as extra arguments and fails the reload: refused here too. A scan, no regex.
function nginxAcceptsAnnotation(s: string): string | null {
  for (let i = 0; i < s.length; ) {
    if (s.startsWith("@STRENGTH", i)) {
      i += 9;
      continue;
    }
    if (s.startsWith("@SECLEVEL=", i) && i + 10 < s.length && s[i + 10]! >= "0" && s[i + 10]! <= "5") {
      i += 11;
      continue;
    }
    const c = s[i]!;
    const ok = (c >= "A" && c <= "Z") || (c >= "a" && c <= "z") || (c >= "0" && c <= "9") || c === "!" || c === ":" || c === "+" || c === "-" || c === "_";
    if (!ok) return `${JSON.stringify(c)} at ${i + 1}: ingress-nginx takes letters, digits and !:+-_ with @STRENGTH and @SECLEVEL=0..5 in this annotation`;
    i++;
  }
  return null;
}

const Ciphers = v.pipe(
  v.string(),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const refused = nginxAcceptsAnnotation(dataset.value);
    if (refused !== null) {
      addIssue({ message: refused });
      return NEVER;
    }
    const out = parseCipherList(dataset.value);
    if ("message" in out) {
      addIssue({ message: out.message });
      return NEVER;
    }
    return out.value;
  }),
);

const NONE: SslCiphersPolicy = Object.freeze({ ciphers: null });

// Only `true` can apply, and it is what every host already has. Both BoringSSL listeners
// (Bun.serve and node:tls) choose the host's context from the SNI after the connection took
// its options from the listener's first context, and the preference is an option
// (SSL_OP_CIPHER_SERVER_PREFERENCE), not part of the context the SNI swaps in (measured: a
// host entry without it still picks by the server's order). nginx copies the options of the
// server's context on SNI (ngx_http_ssl_servername); Portico cannot, so `false` is refused
// with a diagnostic instead of being silently not applied.
const PreferServer = v.pipe(
  Bool,
  v.check((on) => on, "false cannot be applied per host: the listener picks the TLS 1.2 suite by its own order (ssl_prefer_server_ciphers on) for every host"),
);

export const SSL_CIPHERS_FAMILY: Family<SslCiphersPolicy> = {
  name: "ssl-ciphers",
  annotations: [SSL_CIPHERS, SSL_PREFER_SERVER_CIPHERS],
  none: NONE,
  parse(r) {
    const ciphers = r.value(SSL_CIPHERS, Ciphers) ?? null;
    r.read(SSL_PREFER_SERVER_CIPHERS, PreferServer, "ignored: the server's order picks the suite");
    return ciphers === null ? NONE : Object.freeze({ ciphers });
  },
};
