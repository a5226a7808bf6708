// A fact the TLS tests expect in several places, stated once.

/**
 * `openssl ciphers DEFAULT` (OpenSSL 3.0; DEFAULT is ALL:!COMPLEMENTOFDEFAULT:!eNULL) restricted
 * to the TLS 1.2 suites Portico serves, `:`-joined: ingress-nginx's default proxy-ssl-ciphers as
 * nginx's OpenSSL reads it (docs/design.md "TLS cipher strings").
 */
export const OPENSSL_DEFAULT = [
  "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305",
  "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES128-SHA256", "ECDHE-RSA-AES128-SHA256",
  "ECDHE-ECDSA-AES256-SHA", "ECDHE-RSA-AES256-SHA", "ECDHE-ECDSA-AES128-SHA", "ECDHE-RSA-AES128-SHA",
  "AES256-GCM-SHA384", "AES128-GCM-SHA256", "AES256-SHA", "AES128-SHA",
].join(":");
