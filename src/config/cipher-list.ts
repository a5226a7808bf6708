// The form of a TLS 1.2 cipher list as Portico takes it (the ConfigMap's ssl-ciphers, the
// ssl-ciphers annotation): pure, so the annotation parser can use it; whether BoringSSL knows
// each name needs node:tls and is checked where the list is applied (config/values.ts
// cipherList, tls/sni.ts unknownCipherName).

/**
 * OpenSSL cipher names separated by colons (names only: no `!`, `+` or `@` directives), no TLS
 * 1.3 suite, finite-field DHE names left out: the list to apply, or why it cannot be.
 */
export function parseCipherNames(s: string): { readonly value: string } | { readonly message: string } {
  const all = s.split(":");
  if (!all.every((x) => /^[A-Za-z0-9][A-Za-z0-9_-]*$/.test(x))) return { message: "expected OpenSSL cipher names separated by colons" };
  // Finite-field DHE suites (OpenSSL's DHE-RSA-*, DHE-DSS-*), which ingress-nginx's default
  // ssl-ciphers lists: nginx offers them only with ssl_dhparam (since 1.11.0), and ingress-nginx
  // sets none unless ssl-dh-param names a Secret; BoringSSL has none. They are left out, so
  // ingress-nginx's own list reads as what nginx serves with it.
  const items = all.filter((x) => !/^DHE-(RSA|DSS)-/i.test(x));
  if (items.length === 0) return { message: "no suite Portico can serve: finite-field DHE suites need ssl-dh-param, which Portico does not read" };
  for (const name of items) {
    if (name.toLowerCase().startsWith("tls_")) return { message: `TLS 1.3 suite ${name} cannot be chosen (BoringSSL always enables its three TLS 1.3 suites); list TLS 1.2 suites only` };
  }
  return { value: items.join(":") };
}

/** The first name of `list` (parseCipherNames's value) that `known` (node:tls getCiphers(), lowercased) lacks, as a message, or null. */
export function unknownCipherName(list: string, known: ReadonlySet<string>): string | null {
  for (const name of list.split(":")) {
    if (!known.has(name.toLowerCase())) return `unknown TLS 1.2 cipher suite ${name} (OpenSSL names such as ECDHE-RSA-AES128-GCM-SHA256)`;
  }
  return null;
}
