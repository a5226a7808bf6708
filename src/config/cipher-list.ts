// The TLS 1.2 cipher list of ingress-nginx's ssl-ciphers (ConfigMap key and annotation),
// proxy-ssl-ciphers and --tls-ciphers, read as nginx reads it: an OpenSSL cipher string, which
// nginx hands to SSL_CTX_set_cipher_list (ngx_ssl_ciphers). Portico evaluates the string itself
// with OpenSSL 3's rules over the suites it can serve, and applies the resulting ordered list
// of names. Handing the string to BoringSSL instead would not give the same list: its alias
// table (ssl/ssl_cipher.cc kCipherAliases) has no MEDIUM, LOW, SHA256, SHA384,
// COMPLEMENTOFDEFAULT or @SECLEVEL, counts every suite as HIGH and FIPS, and reads TLSv1 as
// SSLv3 (docs/design.md "TLS cipher strings"). Pure (no node:tls), so the annotation parsers can
// use it; every name it yields is one BoringSSL has (config/cipher-list.test.ts checks them
// against node:tls getCiphers()).
//
// OpenSSL's rules (openssl-ciphers(1) "CIPHER LIST FORMAT", ssl/ssl_ciph.c
// ssl_cipher_process_rulestr and ssl_create_cipher_list, OpenSSL 3.0):
// - Rules are separated by `:`, `,`, `;` or spaces. A rule is a word, optionally prefixed by
//   `!` (remove for good), `-` (remove; a later rule may add it back), `+` (move the selected
//   suites that are in the list to its end) or nothing (append the selected suites not yet in
//   it, in OpenSSL's preference order). `@STRENGTH` sorts by key length, `@SECLEVEL=n` sets
//   the security level.
// - A word is a suite name or an alias (HIGH, ECDHE, AESGCM...); `A+B` selects the suites both
//   select. Names are case-sensitive. A word OpenSSL does not know selects nothing and is
//   skipped. A character outside letters, digits and `-._=` is an error ("invalid command"),
//   and so is an unknown `@` command.
// - A string starting with DEFAULT first applies OpenSSL's default list
//   ("ALL:!COMPLEMENTOFDEFAULT:!eNULL"); elsewhere DEFAULT is an unknown word.
// - A suite name OpenSSL has but Portico does not serve (DHE-RSA-AES128-GCM-SHA256) is a word
//   OpenSSL knows, with its own classes: inside `A+B` it narrows the selection as OpenSSL's does,
//   and after it OpenSSL reads on at the next character (`AES128-SHA256!ECDHE` is two rules,
//   `DHE-RSA-AES128-GCM-SHA256+*` an invalid command), so it is looked up in the whole table.
// - A string that leaves no TLS 1.2 suite is an error (SSL_CTX_set_cipher_list "no cipher
//   match"), so nginx's configuration test fails and the last good configuration stays.

// Bits of each category, Portico's own numbering of OpenSSL's algorithm classes.
const K = { RSA: 1, DHE: 2, ECDHE: 4, PSK: 8, RSAPSK: 16, ECDHEPSK: 32, DHEPSK: 64, SRP: 128, GOST: 256, GOST18: 512 } as const;
const A = { RSA: 1, DSS: 2, NULL: 4, ECDSA: 8, PSK: 16, GOST01: 32, GOST12: 64, SRP: 128 } as const;
const E = {
  DES: 1, TDES: 2, RC4: 4, RC2: 8, IDEA: 16, NULL: 32, AES128: 64, AES256: 128, CAMELLIA128: 256, CAMELLIA256: 512,
  GOST89: 1024, SEED: 2048, AES128GCM: 4096, AES256GCM: 8192, AES128CCM: 16384, AES256CCM: 32768, AES128CCM8: 65536,
  AES256CCM8: 131072, GOST8912: 262144, CHACHA20: 524288, ARIA128GCM: 1048576, ARIA256GCM: 2097152, MAGMA: 4194304, KUZNYECHIK: 8388608,
} as const;
const M = { MD5: 1, SHA1: 2, GOST94: 4, GOST89MAC: 8, SHA256: 16, SHA384: 32, AEAD: 64, GOST12_256: 128, GOST89MAC12: 256, GOST12_512: 512, MAGMAOMAC: 1024, KUZNYECHIKOMAC: 2048 } as const;
// Strength classes: OpenSSL's SSL_STRONG_MASK bits and SSL_DEFAULT_MASK (NOT_DEFAULT).
const S = { NONE: 1, LOW: 2, MEDIUM: 4, HIGH: 8, FIPS: 16, NOT_DEFAULT: 32 } as const;
const STRONG_MASK = 0x1f;
const DEFAULT_MASK = 0x20;
const SSL3 = 0x0300;
const TLS1 = 0x0301;
const TLS1_2 = 0x0303;

const AES = E.AES128 | E.AES256 | E.AES128GCM | E.AES256GCM | E.AES128CCM | E.AES256CCM | E.AES128CCM8 | E.AES256CCM8;
const CBC = E.DES | E.TDES | E.RC2 | E.IDEA | E.AES128 | E.AES256 | E.CAMELLIA128 | E.CAMELLIA256 | E.SEED;
const ALL_BITS = 0x7fffffff;

/**
 * OpenSSL's algorithm classes of an SSL_CIPHER (algorithm_mkey, _auth, _enc, _mac, min_tls,
 * algo_strength), the fields a suite has and an alias selects by (ssl/ssl_ciph.c).
 */
interface Classes {
  readonly kx: number;
  readonly au: number;
  readonly enc: number;
  readonly mac: number;
  readonly minTls: number;
  readonly strength: number;
}

interface Suite extends Classes {
  readonly name: string;
  /** OpenSSL's strength_bits: what @STRENGTH sorts by and the security level compares. */
  readonly bits: number;
}

// Strength classes of the table below: every TLS 1.2 suite of OpenSSL 3.0 is HIGH but the NULL
// ones (STRONG_NONE); FIPS and NOT_DEFAULT as OpenSSL marks them. Whether a NULL suite carries
// FIPS cannot be seen through a cipher string (the FIPS alias excludes eNULL), so none does here.
const H = S.HIGH;
const HF = S.HIGH | S.FIPS;
const HN = S.HIGH | S.NOT_DEFAULT;
const HFN = S.HIGH | S.FIPS | S.NOT_DEFAULT;
const NONE = S.NONE;

type Row = readonly [name: string, kx: number, au: number, enc: number, mac: number, minTls: number, bits: number, strength: number];

/**
 * Every TLS 1.2 suite OpenSSL 3.0 (default build) knows by name, in its preference order, with
 * its classes: `openssl ciphers -v 'ALL:COMPLEMENTOFALL:@SECLEVEL=0'` of OpenSSL 3.0.19 less the
 * TLS 1.3 suites (Kx, Au, Enc with its bits, Mac, the version column as the suite's lowest
 * version), the strength classes read from what HIGH, FIPS and COMPLEMENTOFDEFAULT select. A
 * word is looked up here, so an unserved suite's name is read as OpenSSL reads it; evaluation
 * orders only the suites Portico serves (SUITES), since an unserved suite can never come out and
 * every rule moves the suites it selects as a block, keeping the others' relative order.
 */
const OPENSSL_TLS12_SUITES: readonly Row[] = [
  ["ECDHE-ECDSA-AES256-GCM-SHA384", K.ECDHE, A.ECDSA, E.AES256GCM, M.AEAD, TLS1_2, 256, HF],
  ["ECDHE-RSA-AES256-GCM-SHA384", K.ECDHE, A.RSA, E.AES256GCM, M.AEAD, TLS1_2, 256, HF],
  ["DHE-DSS-AES256-GCM-SHA384", K.DHE, A.DSS, E.AES256GCM, M.AEAD, TLS1_2, 256, HFN],
  ["DHE-RSA-AES256-GCM-SHA384", K.DHE, A.RSA, E.AES256GCM, M.AEAD, TLS1_2, 256, HF],
  ["ECDHE-ECDSA-CHACHA20-POLY1305", K.ECDHE, A.ECDSA, E.CHACHA20, M.AEAD, TLS1_2, 256, H],
  ["ECDHE-RSA-CHACHA20-POLY1305", K.ECDHE, A.RSA, E.CHACHA20, M.AEAD, TLS1_2, 256, H],
  ["DHE-RSA-CHACHA20-POLY1305", K.DHE, A.RSA, E.CHACHA20, M.AEAD, TLS1_2, 256, H],
  ["ECDHE-ECDSA-AES256-CCM8", K.ECDHE, A.ECDSA, E.AES256CCM8, M.AEAD, TLS1_2, 256, HN],
  ["ECDHE-ECDSA-AES256-CCM", K.ECDHE, A.ECDSA, E.AES256CCM, M.AEAD, TLS1_2, 256, HN],
  ["DHE-RSA-AES256-CCM8", K.DHE, A.RSA, E.AES256CCM8, M.AEAD, TLS1_2, 256, HN],
  ["DHE-RSA-AES256-CCM", K.DHE, A.RSA, E.AES256CCM, M.AEAD, TLS1_2, 256, HN],
  ["ECDHE-ECDSA-ARIA256-GCM-SHA384", K.ECDHE, A.ECDSA, E.ARIA256GCM, M.AEAD, TLS1_2, 256, HN],
  ["ECDHE-ARIA256-GCM-SHA384", K.ECDHE, A.RSA, E.ARIA256GCM, M.AEAD, TLS1_2, 256, HN],
  ["DHE-DSS-ARIA256-GCM-SHA384", K.DHE, A.DSS, E.ARIA256GCM, M.AEAD, TLS1_2, 256, HN],
  ["DHE-RSA-ARIA256-GCM-SHA384", K.DHE, A.RSA, E.ARIA256GCM, M.AEAD, TLS1_2, 256, HN],
  ["ADH-AES256-GCM-SHA384", K.DHE, A.NULL, E.AES256GCM, M.AEAD, TLS1_2, 256, HFN],
  ["ECDHE-ECDSA-AES128-GCM-SHA256", K.ECDHE, A.ECDSA, E.AES128GCM, M.AEAD, TLS1_2, 128, HF],
  ["ECDHE-RSA-AES128-GCM-SHA256", K.ECDHE, A.RSA, E.AES128GCM, M.AEAD, TLS1_2, 128, HF],
  ["DHE-DSS-AES128-GCM-SHA256", K.DHE, A.DSS, E.AES128GCM, M.AEAD, TLS1_2, 128, HFN],
  ["DHE-RSA-AES128-GCM-SHA256", K.DHE, A.RSA, E.AES128GCM, M.AEAD, TLS1_2, 128, HF],
  ["ECDHE-ECDSA-AES128-CCM8", K.ECDHE, A.ECDSA, E.AES128CCM8, M.AEAD, TLS1_2, 128, HN],
  ["ECDHE-ECDSA-AES128-CCM", K.ECDHE, A.ECDSA, E.AES128CCM, M.AEAD, TLS1_2, 128, HN],
  ["DHE-RSA-AES128-CCM8", K.DHE, A.RSA, E.AES128CCM8, M.AEAD, TLS1_2, 128, HN],
  ["DHE-RSA-AES128-CCM", K.DHE, A.RSA, E.AES128CCM, M.AEAD, TLS1_2, 128, HN],
  ["ECDHE-ECDSA-ARIA128-GCM-SHA256", K.ECDHE, A.ECDSA, E.ARIA128GCM, M.AEAD, TLS1_2, 128, HN],
  ["ECDHE-ARIA128-GCM-SHA256", K.ECDHE, A.RSA, E.ARIA128GCM, M.AEAD, TLS1_2, 128, HN],
  ["DHE-DSS-ARIA128-GCM-SHA256", K.DHE, A.DSS, E.ARIA128GCM, M.AEAD, TLS1_2, 128, HN],
  ["DHE-RSA-ARIA128-GCM-SHA256", K.DHE, A.RSA, E.ARIA128GCM, M.AEAD, TLS1_2, 128, HN],
  ["ADH-AES128-GCM-SHA256", K.DHE, A.NULL, E.AES128GCM, M.AEAD, TLS1_2, 128, HFN],
  ["ECDHE-ECDSA-AES256-SHA384", K.ECDHE, A.ECDSA, E.AES256, M.SHA384, TLS1_2, 256, HF],
  ["ECDHE-RSA-AES256-SHA384", K.ECDHE, A.RSA, E.AES256, M.SHA384, TLS1_2, 256, HF],
  ["DHE-RSA-AES256-SHA256", K.DHE, A.RSA, E.AES256, M.SHA256, TLS1_2, 256, HF],
  ["DHE-DSS-AES256-SHA256", K.DHE, A.DSS, E.AES256, M.SHA256, TLS1_2, 256, HFN],
  ["ECDHE-ECDSA-CAMELLIA256-SHA384", K.ECDHE, A.ECDSA, E.CAMELLIA256, M.SHA384, TLS1_2, 256, HN],
  ["ECDHE-RSA-CAMELLIA256-SHA384", K.ECDHE, A.RSA, E.CAMELLIA256, M.SHA384, TLS1_2, 256, HN],
  ["DHE-RSA-CAMELLIA256-SHA256", K.DHE, A.RSA, E.CAMELLIA256, M.SHA256, TLS1_2, 256, HN],
  ["DHE-DSS-CAMELLIA256-SHA256", K.DHE, A.DSS, E.CAMELLIA256, M.SHA256, TLS1_2, 256, HN],
  ["ADH-AES256-SHA256", K.DHE, A.NULL, E.AES256, M.SHA256, TLS1_2, 256, HFN],
  ["ADH-CAMELLIA256-SHA256", K.DHE, A.NULL, E.CAMELLIA256, M.SHA256, TLS1_2, 256, HN],
  ["ECDHE-ECDSA-AES128-SHA256", K.ECDHE, A.ECDSA, E.AES128, M.SHA256, TLS1_2, 128, HF],
  ["ECDHE-RSA-AES128-SHA256", K.ECDHE, A.RSA, E.AES128, M.SHA256, TLS1_2, 128, HF],
  ["DHE-RSA-AES128-SHA256", K.DHE, A.RSA, E.AES128, M.SHA256, TLS1_2, 128, HF],
  ["DHE-DSS-AES128-SHA256", K.DHE, A.DSS, E.AES128, M.SHA256, TLS1_2, 128, HFN],
  ["ECDHE-ECDSA-CAMELLIA128-SHA256", K.ECDHE, A.ECDSA, E.CAMELLIA128, M.SHA256, TLS1_2, 128, HN],
  ["ECDHE-RSA-CAMELLIA128-SHA256", K.ECDHE, A.RSA, E.CAMELLIA128, M.SHA256, TLS1_2, 128, HN],
  ["DHE-RSA-CAMELLIA128-SHA256", K.DHE, A.RSA, E.CAMELLIA128, M.SHA256, TLS1_2, 128, HN],
  ["DHE-DSS-CAMELLIA128-SHA256", K.DHE, A.DSS, E.CAMELLIA128, M.SHA256, TLS1_2, 128, HN],
  ["ADH-AES128-SHA256", K.DHE, A.NULL, E.AES128, M.SHA256, TLS1_2, 128, HFN],
  ["ADH-CAMELLIA128-SHA256", K.DHE, A.NULL, E.CAMELLIA128, M.SHA256, TLS1_2, 128, HN],
  ["ECDHE-ECDSA-AES256-SHA", K.ECDHE, A.ECDSA, E.AES256, M.SHA1, TLS1, 256, HF],
  ["ECDHE-RSA-AES256-SHA", K.ECDHE, A.RSA, E.AES256, M.SHA1, TLS1, 256, HF],
  ["DHE-RSA-AES256-SHA", K.DHE, A.RSA, E.AES256, M.SHA1, SSL3, 256, HF],
  ["DHE-DSS-AES256-SHA", K.DHE, A.DSS, E.AES256, M.SHA1, SSL3, 256, HFN],
  ["DHE-RSA-CAMELLIA256-SHA", K.DHE, A.RSA, E.CAMELLIA256, M.SHA1, SSL3, 256, HN],
  ["DHE-DSS-CAMELLIA256-SHA", K.DHE, A.DSS, E.CAMELLIA256, M.SHA1, SSL3, 256, HN],
  ["AECDH-AES256-SHA", K.ECDHE, A.NULL, E.AES256, M.SHA1, TLS1, 256, HFN],
  ["ADH-AES256-SHA", K.DHE, A.NULL, E.AES256, M.SHA1, SSL3, 256, HFN],
  ["ADH-CAMELLIA256-SHA", K.DHE, A.NULL, E.CAMELLIA256, M.SHA1, SSL3, 256, HN],
  ["ECDHE-ECDSA-AES128-SHA", K.ECDHE, A.ECDSA, E.AES128, M.SHA1, TLS1, 128, HF],
  ["ECDHE-RSA-AES128-SHA", K.ECDHE, A.RSA, E.AES128, M.SHA1, TLS1, 128, HF],
  ["DHE-RSA-AES128-SHA", K.DHE, A.RSA, E.AES128, M.SHA1, SSL3, 128, HF],
  ["DHE-DSS-AES128-SHA", K.DHE, A.DSS, E.AES128, M.SHA1, SSL3, 128, HFN],
  ["DHE-RSA-CAMELLIA128-SHA", K.DHE, A.RSA, E.CAMELLIA128, M.SHA1, SSL3, 128, HN],
  ["DHE-DSS-CAMELLIA128-SHA", K.DHE, A.DSS, E.CAMELLIA128, M.SHA1, SSL3, 128, HN],
  ["AECDH-AES128-SHA", K.ECDHE, A.NULL, E.AES128, M.SHA1, TLS1, 128, HFN],
  ["ADH-AES128-SHA", K.DHE, A.NULL, E.AES128, M.SHA1, SSL3, 128, HFN],
  ["ADH-CAMELLIA128-SHA", K.DHE, A.NULL, E.CAMELLIA128, M.SHA1, SSL3, 128, HN],
  ["RSA-PSK-AES256-GCM-SHA384", K.RSAPSK, A.RSA, E.AES256GCM, M.AEAD, TLS1_2, 256, HF],
  ["DHE-PSK-AES256-GCM-SHA384", K.DHEPSK, A.PSK, E.AES256GCM, M.AEAD, TLS1_2, 256, HF],
  ["RSA-PSK-CHACHA20-POLY1305", K.RSAPSK, A.RSA, E.CHACHA20, M.AEAD, TLS1_2, 256, H],
  ["DHE-PSK-CHACHA20-POLY1305", K.DHEPSK, A.PSK, E.CHACHA20, M.AEAD, TLS1_2, 256, H],
  ["ECDHE-PSK-CHACHA20-POLY1305", K.ECDHEPSK, A.PSK, E.CHACHA20, M.AEAD, TLS1_2, 256, H],
  ["DHE-PSK-AES256-CCM8", K.DHEPSK, A.PSK, E.AES256CCM8, M.AEAD, TLS1_2, 256, HN],
  ["DHE-PSK-AES256-CCM", K.DHEPSK, A.PSK, E.AES256CCM, M.AEAD, TLS1_2, 256, HN],
  ["RSA-PSK-ARIA256-GCM-SHA384", K.RSAPSK, A.RSA, E.ARIA256GCM, M.AEAD, TLS1_2, 256, HN],
  ["DHE-PSK-ARIA256-GCM-SHA384", K.DHEPSK, A.PSK, E.ARIA256GCM, M.AEAD, TLS1_2, 256, HN],
  ["AES256-GCM-SHA384", K.RSA, A.RSA, E.AES256GCM, M.AEAD, TLS1_2, 256, HF],
  ["AES256-CCM8", K.RSA, A.RSA, E.AES256CCM8, M.AEAD, TLS1_2, 256, HN],
  ["AES256-CCM", K.RSA, A.RSA, E.AES256CCM, M.AEAD, TLS1_2, 256, HN],
  ["ARIA256-GCM-SHA384", K.RSA, A.RSA, E.ARIA256GCM, M.AEAD, TLS1_2, 256, HN],
  ["PSK-AES256-GCM-SHA384", K.PSK, A.PSK, E.AES256GCM, M.AEAD, TLS1_2, 256, HF],
  ["PSK-CHACHA20-POLY1305", K.PSK, A.PSK, E.CHACHA20, M.AEAD, TLS1_2, 256, H],
  ["PSK-AES256-CCM8", K.PSK, A.PSK, E.AES256CCM8, M.AEAD, TLS1_2, 256, HN],
  ["PSK-AES256-CCM", K.PSK, A.PSK, E.AES256CCM, M.AEAD, TLS1_2, 256, HN],
  ["PSK-ARIA256-GCM-SHA384", K.PSK, A.PSK, E.ARIA256GCM, M.AEAD, TLS1_2, 256, HN],
  ["RSA-PSK-AES128-GCM-SHA256", K.RSAPSK, A.RSA, E.AES128GCM, M.AEAD, TLS1_2, 128, HF],
  ["DHE-PSK-AES128-GCM-SHA256", K.DHEPSK, A.PSK, E.AES128GCM, M.AEAD, TLS1_2, 128, HF],
  ["DHE-PSK-AES128-CCM8", K.DHEPSK, A.PSK, E.AES128CCM8, M.AEAD, TLS1_2, 128, HN],
  ["DHE-PSK-AES128-CCM", K.DHEPSK, A.PSK, E.AES128CCM, M.AEAD, TLS1_2, 128, HN],
  ["RSA-PSK-ARIA128-GCM-SHA256", K.RSAPSK, A.RSA, E.ARIA128GCM, M.AEAD, TLS1_2, 128, HN],
  ["DHE-PSK-ARIA128-GCM-SHA256", K.DHEPSK, A.PSK, E.ARIA128GCM, M.AEAD, TLS1_2, 128, HN],
  ["AES128-GCM-SHA256", K.RSA, A.RSA, E.AES128GCM, M.AEAD, TLS1_2, 128, HF],
  ["AES128-CCM8", K.RSA, A.RSA, E.AES128CCM8, M.AEAD, TLS1_2, 128, HN],
  ["AES128-CCM", K.RSA, A.RSA, E.AES128CCM, M.AEAD, TLS1_2, 128, HN],
  ["ARIA128-GCM-SHA256", K.RSA, A.RSA, E.ARIA128GCM, M.AEAD, TLS1_2, 128, HN],
  ["PSK-AES128-GCM-SHA256", K.PSK, A.PSK, E.AES128GCM, M.AEAD, TLS1_2, 128, HF],
  ["PSK-AES128-CCM8", K.PSK, A.PSK, E.AES128CCM8, M.AEAD, TLS1_2, 128, HN],
  ["PSK-AES128-CCM", K.PSK, A.PSK, E.AES128CCM, M.AEAD, TLS1_2, 128, HN],
  ["PSK-ARIA128-GCM-SHA256", K.PSK, A.PSK, E.ARIA128GCM, M.AEAD, TLS1_2, 128, HN],
  ["AES256-SHA256", K.RSA, A.RSA, E.AES256, M.SHA256, TLS1_2, 256, HF],
  ["CAMELLIA256-SHA256", K.RSA, A.RSA, E.CAMELLIA256, M.SHA256, TLS1_2, 256, HN],
  ["AES128-SHA256", K.RSA, A.RSA, E.AES128, M.SHA256, TLS1_2, 128, HF],
  ["CAMELLIA128-SHA256", K.RSA, A.RSA, E.CAMELLIA128, M.SHA256, TLS1_2, 128, HN],
  ["ECDHE-PSK-AES256-CBC-SHA384", K.ECDHEPSK, A.PSK, E.AES256, M.SHA384, TLS1, 256, HF],
  ["ECDHE-PSK-AES256-CBC-SHA", K.ECDHEPSK, A.PSK, E.AES256, M.SHA1, TLS1, 256, HF],
  ["SRP-DSS-AES-256-CBC-SHA", K.SRP, A.DSS, E.AES256, M.SHA1, SSL3, 256, HN],
  ["SRP-RSA-AES-256-CBC-SHA", K.SRP, A.RSA, E.AES256, M.SHA1, SSL3, 256, H],
  ["SRP-AES-256-CBC-SHA", K.SRP, A.SRP, E.AES256, M.SHA1, SSL3, 256, H],
  ["RSA-PSK-AES256-CBC-SHA384", K.RSAPSK, A.RSA, E.AES256, M.SHA384, TLS1, 256, HF],
  ["DHE-PSK-AES256-CBC-SHA384", K.DHEPSK, A.PSK, E.AES256, M.SHA384, TLS1, 256, HF],
  ["RSA-PSK-AES256-CBC-SHA", K.RSAPSK, A.RSA, E.AES256, M.SHA1, SSL3, 256, HF],
  ["DHE-PSK-AES256-CBC-SHA", K.DHEPSK, A.PSK, E.AES256, M.SHA1, SSL3, 256, HF],
  ["ECDHE-PSK-CAMELLIA256-SHA384", K.ECDHEPSK, A.PSK, E.CAMELLIA256, M.SHA384, TLS1, 256, HN],
  ["RSA-PSK-CAMELLIA256-SHA384", K.RSAPSK, A.RSA, E.CAMELLIA256, M.SHA384, TLS1, 256, HN],
  ["DHE-PSK-CAMELLIA256-SHA384", K.DHEPSK, A.PSK, E.CAMELLIA256, M.SHA384, TLS1, 256, HN],
  ["AES256-SHA", K.RSA, A.RSA, E.AES256, M.SHA1, SSL3, 256, HF],
  ["CAMELLIA256-SHA", K.RSA, A.RSA, E.CAMELLIA256, M.SHA1, SSL3, 256, HN],
  ["PSK-AES256-CBC-SHA384", K.PSK, A.PSK, E.AES256, M.SHA384, TLS1, 256, HF],
  ["PSK-AES256-CBC-SHA", K.PSK, A.PSK, E.AES256, M.SHA1, SSL3, 256, HF],
  ["PSK-CAMELLIA256-SHA384", K.PSK, A.PSK, E.CAMELLIA256, M.SHA384, TLS1, 256, HN],
  ["ECDHE-PSK-AES128-CBC-SHA256", K.ECDHEPSK, A.PSK, E.AES128, M.SHA256, TLS1, 128, HF],
  ["ECDHE-PSK-AES128-CBC-SHA", K.ECDHEPSK, A.PSK, E.AES128, M.SHA1, TLS1, 128, HF],
  ["SRP-DSS-AES-128-CBC-SHA", K.SRP, A.DSS, E.AES128, M.SHA1, SSL3, 128, HN],
  ["SRP-RSA-AES-128-CBC-SHA", K.SRP, A.RSA, E.AES128, M.SHA1, SSL3, 128, H],
  ["SRP-AES-128-CBC-SHA", K.SRP, A.SRP, E.AES128, M.SHA1, SSL3, 128, H],
  ["RSA-PSK-AES128-CBC-SHA256", K.RSAPSK, A.RSA, E.AES128, M.SHA256, TLS1, 128, HF],
  ["DHE-PSK-AES128-CBC-SHA256", K.DHEPSK, A.PSK, E.AES128, M.SHA256, TLS1, 128, HF],
  ["RSA-PSK-AES128-CBC-SHA", K.RSAPSK, A.RSA, E.AES128, M.SHA1, SSL3, 128, HF],
  ["DHE-PSK-AES128-CBC-SHA", K.DHEPSK, A.PSK, E.AES128, M.SHA1, SSL3, 128, HF],
  ["ECDHE-PSK-CAMELLIA128-SHA256", K.ECDHEPSK, A.PSK, E.CAMELLIA128, M.SHA256, TLS1, 128, HN],
  ["RSA-PSK-CAMELLIA128-SHA256", K.RSAPSK, A.RSA, E.CAMELLIA128, M.SHA256, TLS1, 128, HN],
  ["DHE-PSK-CAMELLIA128-SHA256", K.DHEPSK, A.PSK, E.CAMELLIA128, M.SHA256, TLS1, 128, HN],
  ["AES128-SHA", K.RSA, A.RSA, E.AES128, M.SHA1, SSL3, 128, HF],
  ["CAMELLIA128-SHA", K.RSA, A.RSA, E.CAMELLIA128, M.SHA1, SSL3, 128, HN],
  ["PSK-AES128-CBC-SHA256", K.PSK, A.PSK, E.AES128, M.SHA256, TLS1, 128, HF],
  ["PSK-AES128-CBC-SHA", K.PSK, A.PSK, E.AES128, M.SHA1, SSL3, 128, HF],
  ["PSK-CAMELLIA128-SHA256", K.PSK, A.PSK, E.CAMELLIA128, M.SHA256, TLS1, 128, HN],
  ["ECDHE-ECDSA-NULL-SHA", K.ECDHE, A.ECDSA, E.NULL, M.SHA1, TLS1, 0, NONE],
  ["ECDHE-RSA-NULL-SHA", K.ECDHE, A.RSA, E.NULL, M.SHA1, TLS1, 0, NONE],
  ["AECDH-NULL-SHA", K.ECDHE, A.NULL, E.NULL, M.SHA1, TLS1, 0, NONE],
  ["NULL-SHA256", K.RSA, A.RSA, E.NULL, M.SHA256, TLS1_2, 0, NONE],
  ["ECDHE-PSK-NULL-SHA384", K.ECDHEPSK, A.PSK, E.NULL, M.SHA384, TLS1, 0, NONE],
  ["ECDHE-PSK-NULL-SHA256", K.ECDHEPSK, A.PSK, E.NULL, M.SHA256, TLS1, 0, NONE],
  ["ECDHE-PSK-NULL-SHA", K.ECDHEPSK, A.PSK, E.NULL, M.SHA1, TLS1, 0, NONE],
  ["RSA-PSK-NULL-SHA384", K.RSAPSK, A.RSA, E.NULL, M.SHA384, TLS1, 0, NONE],
  ["RSA-PSK-NULL-SHA256", K.RSAPSK, A.RSA, E.NULL, M.SHA256, TLS1, 0, NONE],
  ["DHE-PSK-NULL-SHA384", K.DHEPSK, A.PSK, E.NULL, M.SHA384, TLS1, 0, NONE],
  ["DHE-PSK-NULL-SHA256", K.DHEPSK, A.PSK, E.NULL, M.SHA256, TLS1, 0, NONE],
  ["RSA-PSK-NULL-SHA", K.RSAPSK, A.RSA, E.NULL, M.SHA1, SSL3, 0, NONE],
  ["DHE-PSK-NULL-SHA", K.DHEPSK, A.PSK, E.NULL, M.SHA1, SSL3, 0, NONE],
  ["NULL-SHA", K.RSA, A.RSA, E.NULL, M.SHA1, SSL3, 0, NONE],
  ["NULL-MD5", K.RSA, A.RSA, E.NULL, M.MD5, SSL3, 0, NONE],
  ["PSK-NULL-SHA384", K.PSK, A.PSK, E.NULL, M.SHA384, TLS1, 0, NONE],
  ["PSK-NULL-SHA256", K.PSK, A.PSK, E.NULL, M.SHA256, TLS1, 0, NONE],
  ["PSK-NULL-SHA", K.PSK, A.PSK, E.NULL, M.SHA1, SSL3, 0, NONE],
];

/**
 * The TLS 1.2 suites Portico can serve, in OpenSSL 3.0's preference order. Every one is also a
 * BoringSSL suite (node:tls getCiphers(); config/cipher-list.test.ts checks it). BoringSSL's
 * others are left out: DES-CBC3-SHA, because OpenSSL 3 is built without it by default
 * (no-weak-ssl-ciphers), so no nginx linked with it offers it; the PSK suites, because neither
 * nginx nor Portico configures pre-shared keys, so neither could negotiate them.
 */
const SERVED: ReadonlySet<string> = new Set([
  "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305",
  "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES128-SHA256", "ECDHE-RSA-AES128-SHA256",
  "ECDHE-ECDSA-AES256-SHA", "ECDHE-RSA-AES256-SHA", "ECDHE-ECDSA-AES128-SHA", "ECDHE-RSA-AES128-SHA",
  "AES256-GCM-SHA384", "AES128-GCM-SHA256", "AES256-SHA", "AES128-SHA",
]);

const ALL_SUITES: readonly Suite[] = Object.freeze(
  OPENSSL_TLS12_SUITES.map(([name, kx, au, enc, mac, minTls, bits, strength]) => Object.freeze({ name, kx, au, enc, mac, minTls, strength, bits })),
);
const SUITES: readonly Suite[] = Object.freeze(ALL_SUITES.filter((x) => SERVED.has(x.name)));

/** The names evaluation can yield, in OpenSSL's preference order. */
export const SERVABLE_TLS12_SUITES: readonly string[] = Object.freeze(SUITES.map((s) => s.name));

/** What a word selects: OpenSSL's SSL_CIPHER alias fields (0: any), or one suite by name. */
interface Selector extends Classes {
  readonly id?: string;
}

const sel = (kx: number, au = 0, enc = 0, mac = 0, minTls = 0, strength = 0): Selector => Object.freeze({ kx, au, enc, mac, minTls, strength });

// OpenSSL 3.0's alias table (ssl/ssl_ciph.c cipher_aliases), in Portico's bits, less the
// aliases ssl_cipher_collect_aliases leaves out because the default build's providers lack their
// algorithms (RC4, RC2, IDEA, SEED and the GOST ones): those are unknown words, which matters
// inside `A+B` (an unknown part ends the rule unread). 3DES stays an alias that selects nothing.
const ALIASES: ReadonlyMap<string, Selector> = new Map<string, Selector>([
  ["ALL", sel(0, 0, ALL_BITS & ~E.NULL)],
  ["COMPLEMENTOFALL", sel(0, 0, E.NULL)],
  ["COMPLEMENTOFDEFAULT", sel(0, 0, 0, 0, 0, S.NOT_DEFAULT)],
  ["kRSA", sel(K.RSA)],
  ["kEDH", sel(K.DHE)],
  ["kDHE", sel(K.DHE)],
  ["DH", sel(K.DHE)],
  ["kEECDH", sel(K.ECDHE)],
  ["kECDHE", sel(K.ECDHE)],
  ["ECDH", sel(K.ECDHE)],
  ["kPSK", sel(K.PSK)],
  ["kRSAPSK", sel(K.RSAPSK)],
  ["kECDHEPSK", sel(K.ECDHEPSK)],
  ["kDHEPSK", sel(K.DHEPSK)],
  ["kSRP", sel(K.SRP)],
  ["aRSA", sel(0, A.RSA)],
  ["aDSS", sel(0, A.DSS)],
  ["DSS", sel(0, A.DSS)],
  ["aNULL", sel(0, A.NULL)],
  ["aECDSA", sel(0, A.ECDSA)],
  ["ECDSA", sel(0, A.ECDSA)],
  ["aPSK", sel(0, A.PSK)],
  ["aSRP", sel(0, A.SRP)],
  ["EDH", sel(K.DHE, ALL_BITS & ~A.NULL)],
  ["DHE", sel(K.DHE, ALL_BITS & ~A.NULL)],
  ["EECDH", sel(K.ECDHE, ALL_BITS & ~A.NULL)],
  ["ECDHE", sel(K.ECDHE, ALL_BITS & ~A.NULL)],
  ["NULL", sel(0, 0, E.NULL)],
  ["RSA", sel(K.RSA, A.RSA)],
  ["ADH", sel(K.DHE, A.NULL)],
  ["AECDH", sel(K.ECDHE, A.NULL)],
  ["PSK", sel(K.PSK | K.RSAPSK | K.ECDHEPSK | K.DHEPSK)],
  ["SRP", sel(K.SRP)],
  ["3DES", sel(0, 0, E.TDES)],
  ["eNULL", sel(0, 0, E.NULL)],
  ["AES128", sel(0, 0, E.AES128 | E.AES128GCM | E.AES128CCM | E.AES128CCM8)],
  ["AES256", sel(0, 0, E.AES256 | E.AES256GCM | E.AES256CCM | E.AES256CCM8)],
  ["AES", sel(0, 0, AES)],
  ["AESGCM", sel(0, 0, E.AES128GCM | E.AES256GCM)],
  ["AESCCM", sel(0, 0, E.AES128CCM | E.AES256CCM | E.AES128CCM8 | E.AES256CCM8)],
  ["AESCCM8", sel(0, 0, E.AES128CCM8 | E.AES256CCM8)],
  ["CAMELLIA128", sel(0, 0, E.CAMELLIA128)],
  ["CAMELLIA256", sel(0, 0, E.CAMELLIA256)],
  ["CAMELLIA", sel(0, 0, E.CAMELLIA128 | E.CAMELLIA256)],
  ["CHACHA20", sel(0, 0, E.CHACHA20)],
  ["ARIA", sel(0, 0, E.ARIA128GCM | E.ARIA256GCM)],
  ["ARIAGCM", sel(0, 0, E.ARIA128GCM | E.ARIA256GCM)],
  ["ARIA128", sel(0, 0, E.ARIA128GCM)],
  ["ARIA256", sel(0, 0, E.ARIA256GCM)],
  ["CBC", sel(0, 0, CBC)],
  ["MD5", sel(0, 0, 0, M.MD5)],
  ["SHA1", sel(0, 0, 0, M.SHA1)],
  ["SHA", sel(0, 0, 0, M.SHA1)],
  ["SHA256", sel(0, 0, 0, M.SHA256)],
  ["SHA384", sel(0, 0, 0, M.SHA384)],
  ["SSLv3", sel(0, 0, 0, 0, SSL3)],
  ["TLSv1", sel(0, 0, 0, 0, TLS1)],
  ["TLSv1.0", sel(0, 0, 0, 0, TLS1)],
  ["TLSv1.2", sel(0, 0, 0, 0, TLS1_2)],
  ["LOW", sel(0, 0, 0, 0, 0, S.LOW)],
  ["MEDIUM", sel(0, 0, 0, 0, 0, S.MEDIUM)],
  ["HIGH", sel(0, 0, 0, 0, 0, S.HIGH)],
  ["FIPS", sel(0, 0, ALL_BITS & ~E.NULL, 0, 0, S.FIPS)],
  // The legacy EDH- names of the DHE 3DES suites stay aliases in OpenSSL 3.0 (HIGH and FIPS, as
  // `EDH-RSA-DES-CBC3-SHA+HIGH+*` being refused shows); with no 3DES suite built they select
  // nothing, but they are words OpenSSL knows.
  ["EDH-RSA-DES-CBC3-SHA", sel(K.DHE, A.RSA, E.TDES, M.SHA1, 0, S.HIGH | S.FIPS)],
  ["EDH-DSS-DES-CBC3-SHA", sel(K.DHE, A.DSS, E.TDES, M.SHA1, 0, S.HIGH | S.FIPS)],
]);
// DTLSv1, DTLSv1.0 and DTLSv1.2 restrict DTLS versions only, and OpenSSL leaves them out of a
// TLS method's aliases (`openssl ciphers DTLSv1` matches nothing): unknown words here too.

const BY_NAME: ReadonlyMap<string, Suite> = new Map(ALL_SUITES.map((s) => [s.name, s]));

// openssl-ciphers(1): the default cipher list (OSSL_default_cipher_list, OpenSSL 3.0).
const OPENSSL_DEFAULT = "ALL:!COMPLEMENTOFDEFAULT:!eNULL";

/** Longest string read: far above any real list, so the evaluation stays small. */
export const MAX_CIPHER_STRING = 4096;

export type CipherListResult =
  | {
      /** The suites to apply, OpenSSL names separated by colons, in the server's order. */
      readonly value: string;
      /** Words that name nothing Portico serves and no OpenSSL 3 alias (OpenSSL skips them too). */
      readonly unknown: readonly string[];
    }
  | {
      readonly message: string;
      /** True: OpenSSL itself refuses the string (nginx's configuration test fails); false: it only selects nothing Portico serves. */
      readonly syntax: boolean;
    };

const isSep = (c: string): boolean => c === ":" || c === " " || c === ";" || c === ",";
const isWordChar = (c: string): boolean => (c >= "A" && c <= "Z") || (c >= "a" && c <= "z") || (c >= "0" && c <= "9") || c === "-" || c === "_" || c === "." || c === "=";

type Rule = "add" | "kill" | "del" | "ord" | "special";

/** The list under construction: OpenSSL's CIPHER_ORDER linked list, as an array of suites with an active flag. */
class Order {
  list: { suite: Suite; active: boolean }[] = SUITES.map((suite) => ({ suite, active: false }));

  apply(rule: Exclude<Rule, "special">, s: Selector | null, bits = -1): void {
    const matches = (x: Suite): boolean => {
      if (bits >= 0) return x.bits === bits;
      if (s === null) return false;
      if (s.id !== undefined && s.id !== x.name) return false;
      if (s.kx !== 0 && (s.kx & x.kx) === 0) return false;
      if (s.au !== 0 && (s.au & x.au) === 0) return false;
      if (s.enc !== 0 && (s.enc & x.enc) === 0) return false;
      if (s.mac !== 0 && (s.mac & x.mac) === 0) return false;
      if (s.minTls !== 0 && s.minTls !== x.minTls) return false;
      if ((s.strength & STRONG_MASK) !== 0 && (s.strength & STRONG_MASK & x.strength) === 0) return false;
      if ((s.strength & DEFAULT_MASK) !== 0 && (s.strength & DEFAULT_MASK & x.strength) === 0) return false;
      return true;
    };
    const hit = this.list.filter((e) => matches(e.suite));
    const rest = this.list.filter((e) => !matches(e.suite));
    switch (rule) {
      case "add": // appended at the end in list order, the ones already active stay put
        this.list = [...this.list.filter((e) => !(matches(e.suite) && !e.active)), ...hit.filter((e) => !e.active)];
        for (const e of hit) e.active = true;
        return;
      case "ord": // the active ones move to the end, in list order
        this.list = [...this.list.filter((e) => !(matches(e.suite) && e.active)), ...hit.filter((e) => e.active)];
        return;
      case "del": // the active ones move to the front, inactive, so a later add puts them first
        this.list = [...hit.filter((e) => e.active), ...this.list.filter((e) => !(matches(e.suite) && e.active))];
        for (const e of hit) e.active = false;
        return;
      case "kill": // gone for good
        this.list = rest;
        return;
    }
  }

  /** @STRENGTH: active suites by strength_bits, strongest first, otherwise in list order. */
  strengthSort(): void {
    const used = [...new Set(this.list.filter((e) => e.active).map((e) => e.suite.bits))].sort((a, b) => b - a);
    for (const bits of used) this.apply("ord", null, bits);
  }
}

/**
 * One word of a rule, with `A+B` parts, combined as OpenSSL combines them while it reads them:
 * the category masks of the parts are ANDed, a suite name pins that suite. A part OpenSSL does
 * not know, or one whose mask leaves nothing in a category, ends the word: the rule selects
 * nothing and the rest of it is skipped unread.
 */
class Combined {
  kx = 0;
  au = 0;
  enc = 0;
  mac = 0;
  minTls = 0;
  strength = 0;
  id: string | undefined;

  /** False: the rule selects nothing. */
  add(part: string): boolean {
    const named = BY_NAME.get(part);
    const a: Selector | undefined = named === undefined ? ALIASES.get(part) : { kx: named.kx, au: named.au, enc: named.enc, mac: named.mac, minTls: 0, strength: named.strength };
    if (a === undefined) return false;
    const and = (cur: number, next: number): number | null => (next === 0 ? cur : cur === 0 ? next : (cur & next) === 0 ? null : cur & next);
    const k = and(this.kx, a.kx), u = and(this.au, a.au), e = and(this.enc, a.enc), m = and(this.mac, a.mac);
    if (k === null || u === null || e === null || m === null) return false;
    this.kx = k;
    this.au = u;
    this.enc = e;
    this.mac = m;
    const strong = a.strength & STRONG_MASK;
    if (strong !== 0) {
      if ((this.strength & STRONG_MASK) !== 0) {
        this.strength &= strong | ~STRONG_MASK;
        if ((this.strength & STRONG_MASK) === 0) return false;
      } else this.strength = strong; // OpenSSL assigns here, dropping a NOT_DEFAULT bit an earlier part set
    }
    const def = a.strength & DEFAULT_MASK;
    if (def !== 0) {
      if ((this.strength & DEFAULT_MASK) !== 0) {
        this.strength &= def | ~DEFAULT_MASK;
        if ((this.strength & DEFAULT_MASK) === 0) return false;
      } else this.strength |= def;
    }
    // A suite name pins the suite; only an alias's version becomes part of the selection.
    if (named !== undefined) this.id = named.name;
    else if (a.minTls !== 0) {
      if (this.minTls !== 0 && this.minTls !== a.minTls) return false;
      this.minTls = a.minTls;
    }
    return true;
  }

  selector(): Selector {
    return Object.freeze({ ...(this.id === undefined ? {} : { id: this.id }), kx: this.kx, au: this.au, enc: this.enc, mac: this.mac, minTls: this.minTls, strength: this.strength });
  }
}

/** ssl_cipher_process_rulestr: the rules of `s` applied to `order`, or why OpenSSL refuses the string. */
function processRules(s: string, order: Order, state: { secLevel: number; unknown: string[] }): string | null {
  let error: string | null = null;
  let i = 0;
  while (i < s.length) {
    const c = s[i]!;
    let rule: Rule = "add";
    if (c === "-") rule = "del";
    else if (c === "+") rule = "ord";
    else if (c === "!") rule = "kill";
    else if (c === "@") rule = "special";
    if (rule !== "add") i++;
    else if (isSep(c)) {
      i++;
      continue;
    }
    const combined = new Combined();
    let word = "";
    let invalid = false;
    let found = true;
    for (;;) {
      const start = i;
      while (i < s.length && isWordChar(s[i]!)) i++;
      word = s.slice(start, i);
      if (word === "") {
        // Neither a separator, a prefix nor a word: OpenSSL's "invalid command", which fails the whole string.
        error ??= i >= s.length ? `a rule ends without a word at ${i + 1}` : `invalid character ${JSON.stringify(s[i])} at ${i + 1}: OpenSSL cipher strings have words of letters, digits and -._= with the prefixes ! - + @, separated by : , ; or spaces`;
        invalid = true;
        i++;
        break;
      }
      if (rule === "special") break;
      const multi = s[i] === "+";
      if (multi) i++;
      if (!combined.add(word)) {
        if (!BY_NAME.has(word) && !ALIASES.has(word) && !state.unknown.includes(word)) state.unknown.push(word);
        found = false;
        break;
      }
      if (!multi) break;
    }
    if (invalid) {
      while (i < s.length && !isSep(s[i]!)) i++;
    } else if (rule === "special") {
      if (word === "STRENGTH") order.strengthSort();
      else if (word.length === 10 && word.startsWith("SECLEVEL=") && word[9]! >= "0" && word[9]! <= "5") state.secLevel = Number(word[9]);
      else error ??= `unknown command @${word} (OpenSSL has @STRENGTH and @SECLEVEL=0..5)`;
      while (i < s.length && !isSep(s[i]!)) i++;
    } else if (found) {
      order.apply(rule, combined.selector());
    } else {
      while (i < s.length && !isSep(s[i]!)) i++;
    }
  }
  return error;
}

// The security level's check of a suite (ssl/ssl_cert.c ssl_security_default_callback,
// SSL_SECOP_CIPHER_*): at least the level's bits of strength, no SHA-1 MAC above 160 bits, and
// forward secrecy from level 3. OpenSSL 3.0's default level is 1, which keeps every suite here.
const LEVEL_BITS = [0, 80, 112, 128, 192, 256];
function allowedAt(level: number, x: Suite): boolean {
  const min = LEVEL_BITS[level] ?? 0;
  if (x.bits < min) return false;
  if (min > 160 && x.mac === M.SHA1) return false;
  if (level >= 3 && (x.kx & (K.DHE | K.ECDHE | K.DHEPSK | K.ECDHEPSK)) === 0) return false;
  return true;
}

/**
 * An OpenSSL cipher string evaluated as OpenSSL 3 would, over the TLS 1.2 suites Portico
 * serves: the ordered list to apply, or why nginx would refuse the string. Total: any string
 * gives one of the two, never throws.
 */
export function parseCipherList(input: string): CipherListResult {
  if (input.length > MAX_CIPHER_STRING) return { message: `longer than ${MAX_CIPHER_STRING} characters`, syntax: true };
  let s = input;
  // ssl_create_cipher_list (check_suiteb_cipher_list): a string starting with a Suite B keyword
  // is replaced by the Suite B suites (RFC 6460), whatever follows it.
  if (s.startsWith("SUITEB128ONLY")) s = "ECDHE-ECDSA-AES128-GCM-SHA256";
  else if (s.startsWith("SUITEB128C2") || s.startsWith("SUITEB192")) s = "ECDHE-ECDSA-AES256-GCM-SHA384";
  else if (s.startsWith("SUITEB128")) s = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384";
  const order = new Order();
  const state = { secLevel: 1, unknown: [] as string[] };
  let error: string | null = null;
  if (s.startsWith("DEFAULT")) {
    error = processRules(OPENSSL_DEFAULT, order, state);
    s = s.slice(s[7] === ":" ? 8 : 7);
  }
  error ??= processRules(s, order, state);
  if (error !== null) return { message: error, syntax: true };
  const names = order.list.filter((e) => e.active && allowedAt(state.secLevel, e.suite)).map((e) => e.suite.name);
  if (names.length === 0) {
    const tls13 = state.unknown.find((w) => w.startsWith("TLS_"));
    if (tls13 !== undefined) return { message: `TLS 1.3 suite ${tls13} cannot be chosen (BoringSSL always enables its three TLS 1.3 suites); list TLS 1.2 suites`, syntax: false };
    return { message: `no suite Portico can serve: the string selects none of its TLS 1.2 suites (ECDHE or RSA key exchange with AES or CHACHA20-POLY1305; finite-field DHE, CAMELLIA, ARIA, CCM, 3DES and PSK suites are never offered)`, syntax: false };
  }
  return { value: names.join(":"), unknown: Object.freeze(state.unknown) };
}
